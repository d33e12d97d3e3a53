package recorder

import (
	"crypto/tls"
	"fmt"

	"github.com/krply/krply/internal/reread"
)

// certs serves the key pair of --tls-cert-file and --tls-key-file, read
// again when either file changes: a Secret volume is updated in place when
// cert-manager (or anyone) renews the certificate, and the recorder keeps
// running. A new pair that does not load (the certificate written, its
// key not yet) leaves the old one served until it does.
type certs struct {
	pair *reread.Files[*tls.Certificate]
}

// loadCerts reads the key pair, naming the flags when it cannot.
func loadCerts(certFile, keyFile string) (*certs, error) {
	c := &certs{pair: reread.New(func() (*tls.Certificate, error) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		return &cert, err
	}, certFile, keyFile)}
	if _, _, err := c.pair.Get(); err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", certFile, keyFile, err)
	}
	return c, nil
}

// GetCertificate is tls.Config's: the pair, read again first when a file
// changed.
func (c *certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert, _, _ := c.pair.Get() // on failure the old pair, and the next handshake tries again
	return cert, nil
}
