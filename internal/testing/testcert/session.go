package testcert

import (
	"crypto/tls"
	"sync"
)

// LastSession is a TLS client session cache that offers the last
// session it was given whatever the server name: what a client crafting
// its resumption does (tests of sessions resumed under another name).
type LastSession struct {
	mu sync.Mutex
	cs *tls.ClientSessionState
}

// Get implements tls.ClientSessionCache.
func (c *LastSession) Get(string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs, c.cs != nil
}

// Put implements tls.ClientSessionCache; a nil session is no news.
func (c *LastSession) Put(_ string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs != nil {
		c.cs = cs
	}
}

// Has reports whether a session was given.
func (c *LastSession) Has() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs != nil
}

// Forget drops the session.
func (c *LastSession) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cs = nil
}
