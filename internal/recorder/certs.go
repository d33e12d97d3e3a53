package recorder

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certReloadEvery is how often, at most, certs looks at its files again.
const certReloadEvery = time.Second

// certs serves the key pair of --tls-cert-file and --tls-key-file, read
// again when either file changes: a Secret volume is updated in place when
// cert-manager (or anyone) renews the certificate, and the recorder keeps
// running. A new pair that does not load (the certificate written, its
// key not yet) leaves the old one served until it does.
type certs struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamps  [2]fileStamp
	checked time.Time
}

// fileStamp tells whether a file changed: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// loadCerts reads the key pair, naming the flags when it cannot.
func loadCerts(certFile, keyFile string) (*certs, error) {
	c := &certs{certFile: certFile, keyFile: keyFile}
	if err := c.load(); err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", certFile, keyFile, err)
	}
	c.checked = time.Now()
	return c, nil
}

// load reads the files and their stamps.
func (c *certs) load() error {
	var stamps [2]fileStamp
	for i, path := range []string{c.certFile, c.keyFile} {
		s, err := stampOf(path)
		if err != nil {
			return err
		}
		stamps[i] = s
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.cert, c.stamps = &cert, stamps
	return nil
}

// GetCertificate is tls.Config's: the pair, read again first when a file
// changed since it was (looked at once per certReloadEvery at most).
func (c *certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= certReloadEvery {
		c.checked = now
		if c.changed() {
			_ = c.load() // on failure the old pair stays, and the next look tries again
		}
	}
	return c.cert, nil
}

// changed reports whether either file is not as it was read.
func (c *certs) changed() bool {
	for i, path := range []string{c.certFile, c.keyFile} {
		if s, err := stampOf(path); err != nil || s != c.stamps[i] {
			return true
		}
	}
	return false
}
