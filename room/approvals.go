package room

import (
	"context"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// RecordApproval stores a bridge's approval request.
func (s *Service) RecordApproval(ctx context.Context, handle string, req wire.ApprovalRequest) error {
	if len(req.Summary) > 8<<10 {
		req.Summary = req.Summary[:8<<10] + "…"
	}
	if len(req.Diff) > 64<<10 {
		req.Diff = req.Diff[:64<<10] + "\n… (diff truncated)"
	}
	if len(req.Sandbox) > 512 {
		req.Sandbox = req.Sandbox[:512] + "…"
	}
	req.Data = authz.MessageDataKinds(req.Data)
	req.DataTainted = len(req.Data) > 0
	_, err := s.append(ctx, chat.EvApprovalRequested, chat.ApprovalRequested{ApprovalRequest: req, Handle: handle})
	return err
}

// CheckDecision decides whether actor may decide approval id with the hash
// they were shown, against the current projection.
func (s *Service) CheckDecision(ctx context.Context, actor *chat.User, id, shownHash string) (*chat.Approval, error) {
	p, err := s.ApprovalByID(ctx, id)
	if err != nil {
		return nil, err
	}
	d := authz.CheckDecision(authz.DecisionCheck{Actor: actor.Name, Owner: p.Owner, ShownHash: shownHash, RequestHash: p.PayloadHash,
		State: p.Status, Expires: p.Expires, Now: s.now()})
	if !d.Allow {
		code := wh.EConflict
		if d.Reason == authz.ReasonForbidden {
			code = wh.EForbidden
		}
		return p, &wh.Error{Code: code, Message: d.Message, Reason: d.Reason}
	}
	return p, nil
}

// RecordDecision stores an approval's outcome. The first outcome wins.
func (s *Service) RecordDecision(ctx context.Context, id, status, by, hash, reason string) error {
	return s.RecordDecisionOnce(ctx, "", id, status, by, hash, reason)
}

// RecordDecisionOnce is RecordDecision under an idempotency key ("" for a
// fresh one): several hub nodes expiring one approval record it once.
func (s *Service) RecordDecisionOnce(ctx context.Context, key, id, status, by, hash, reason string) error {
	return s.appendOnce(ctx, key, chat.EvApprovalDecided, chat.ApprovalDecided{ID: id, Status: status, By: by, Hash: hash, Reason: reason})
}
