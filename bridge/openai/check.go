package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Check is for `wheelhouse doctor`: it validates an agent's options and
// asks the endpoint which models it serves (GET {base_url}/models). It
// returns a line saying what it found, or an error saying what to fix.
func Check(ctx context.Context, a bridge.AgentConfig) (string, error) {
	cfg, err := ParseConfig(a, os.LookupEnv)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := newClient(&cfg)
	defer c.close()
	if err := c.reachable(ctx); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+"/models", nil)
	if err != nil {
		return "", err
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s did not answer: %v", cfg.BaseURL, unwrapURL(err))}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Sprintf("%s reachable (it lists no models; cannot check %q)", cfg.BaseURL, cfg.Model), nil
	case resp.StatusCode != http.StatusOK:
		return "", c.statusError(resp.StatusCode, b)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Sprintf("%s reachable (its model list is not the OpenAI format; cannot check %q)", cfg.BaseURL, cfg.Model), nil
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Contains(ids, cfg.Model) {
		if len(ids) > 10 {
			ids = append(ids[:10], "…")
		}
		return "", fmt.Errorf("%s does not serve model %q (it serves: %s)", cfg.BaseURL, cfg.Model, strings.Join(ids, ", "))
	}
	return fmt.Sprintf("%s serves %s", cfg.BaseURL, cfg.Model), nil
}
