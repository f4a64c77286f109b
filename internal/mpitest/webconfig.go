package mpitest

import (
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
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// WebConfig is a web configuration file for the metrics page made by
// [NewWebConfig]: TLS with a certificate of its own and one basic-auth
// user.
type WebConfig struct {
	// Path is the web configuration file; CAFile the certificate (PEM)
	// a client trusts, Dir the directory that holds them both.
	Path, CAFile, Dir string
	// User and Password are the basic-auth user and its password; the
	// file holds its bcrypt hash.
	User, Password string
	pool           *x509.CertPool
}

// NewWebConfig writes, in a directory of the test, a self-signed ECDSA
// certificate for 127.0.0.1 (valid for a day), its key, and a web
// configuration file (exporter-toolkit's format) that serves TLS with it
// and lets the user "scraper" in with a random password.
func NewWebConfig(t testing.TB) WebConfig {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mpiprobe test"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	password := rand.Text()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	w := WebConfig{Dir: t.TempDir(), User: "scraper", Password: password, pool: x509.NewCertPool()}
	w.Path, w.CAFile = filepath.Join(w.Dir, "web.yml"), filepath.Join(w.Dir, "cert.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	w.pool.AppendCertsFromPEM(certPEM)
	config := fmt.Sprintf("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  %s: %s\n", w.User, hash)
	for name, b := range map[string][]byte{
		"cert.pem": certPEM,
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"web.yml":  []byte(config),
	} {
		if err := os.WriteFile(filepath.Join(w.Dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// Client returns an HTTP client that trusts the configuration's
// certificate only.
func (w WebConfig) Client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.pool}}}
}
