package recorder

import (
	"crypto/tls"
	"fmt"

	"github.com/krply/krply/internal/reread"
)

// certificates returns tls.Config's GetCertificate for the key pair of
// --tls-cert-file and --tls-key-file, read again when either file changes:
// a Secret volume is updated in place when cert-manager (or anyone) renews
// the certificate, and the recorder keeps running. A new pair that does
// not load (the certificate written, its key not yet) leaves the old one
// served until it does. It fails, naming the flags, when the pair does not
// load now.
func certificates(certFile, keyFile string) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	pair := reread.New(func() (*tls.Certificate, error) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		return &cert, err
	}, certFile, keyFile)
	if _, _, err := pair.Get(); err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", certFile, keyFile, err)
	}
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		cert, _, _ := pair.Get() // on failure the old pair, and the next handshake tries again
		return cert, nil
	}, nil
}
