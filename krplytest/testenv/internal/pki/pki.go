// Package pki generates the throwaway certificates and keys of the test
// control plane: one CA per environment, serving certificates for loopback,
// and a service-account signing key. Nothing here is fit for production.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// validity is long enough for any test run and short enough to be obviously
// disposable.
const validity = 7 * 24 * time.Hour

// CA is a certificate authority that signs serving certificates.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertPEM is the CA certificate, the trust anchor clients need.
	CertPEM []byte
}

// NewCA creates a self-signed CA named commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, CertPEM: encodeCert(der)}, nil
}

// ServingCert is a certificate and its private key, PEM encoded.
type ServingCert struct {
	CertPEM []byte
	KeyPEM  []byte
}

// TLSCertificate returns the pair in the form crypto/tls serves.
func (s ServingCert) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(s.CertPEM, s.KeyPEM)
}

// NewServingCert issues a server certificate valid for loopback (127.0.0.1,
// ::1, localhost) plus the given extra host names.
func (ca *CA) NewServingCert(commonName string, hosts ...string) (ServingCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCert{}, fmt.Errorf("pki: generate serving key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     append([]string{"localhost"}, hosts...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return ServingCert{}, fmt.Errorf("pki: create serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return ServingCert{}, err
	}
	return ServingCert{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// NewSigningKey returns a fresh private key, PEM encoded as PKCS #8, and its
// public key, PEM encoded as PKIX; kube-apiserver accepts both for
// --service-account-signing-key-file and --service-account-key-file.
func NewSigningKey() (privatePEM, publicPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate signing key: %w", err)
	}
	privatePEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("pki: marshal public key: %w", err)
	}
	return privatePEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		// crypto/rand does not fail on supported platforms (Go 1.24+ crashes
		// the program instead), so this is unreachable.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
