package bridge

type controlServer struct{}

func startControl(b *Bridge, path string) (*controlServer, error) { return &controlServer{}, nil }

func (c *controlServer) Close() error { return nil }

// DefaultControlSocket is where the bridge listens for the owner's local
// commands (wheelhouse approvals / approve / deny).
func DefaultControlSocket() string {
	return filepathJoin(configDir(), "wheelhouse", "bridge.sock")
}
