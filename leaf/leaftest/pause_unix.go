//go:build unix

package leaftest

import "syscall"

// Pause stops the hub process (SIGSTOP) without closing its connections,
// as a hung or swapping server: nothing it receives is answered until it
// is killed (Kill, Restart). It does nothing when the hub is not running.
func (h *Hub) Pause() {
	h.mu.Lock()
	cmd := h.cmd
	h.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGSTOP)
	}
}
