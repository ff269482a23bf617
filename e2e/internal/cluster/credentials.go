package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
)

// adminUser is the user the static token authenticates as. Its group
// system:masters is allowed everything whatever the authorization mode.
const adminUser = "e2e-admin"

// newToken returns a random bearer token.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeTokenFile writes the kube-apiserver's --token-auth-file: one CSV line
// per user of token, user name, uid and groups. The admin token's user is in
// system:masters; userTokens maps the other users, in no group, to theirs.
func writeTokenFile(path, adminToken string, userTokens map[string]string) error {
	lines := fmt.Sprintf("%s,%s,%s,system:masters\n", adminToken, adminUser, adminUser)
	for user, token := range userTokens {
		lines += fmt.Sprintf("%s,%s,%s\n", token, user, user)
	}
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	return nil
}

// writeServiceAccountKey writes a fresh RSA private key in PEM. The
// kube-apiserver refuses to start without a service-account signing key and
// the key to verify its tokens; one private key file serves as both (the
// public key is derived from it).
func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("service-account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("service-account key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("service-account key: %w", err)
	}
	return nil
}
