package queue

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Credentials are what a NATS server may ask of its clients: one way of
// authenticating (user and password, a token, an NKey seed file or a
// credentials file) and, for TLS, a CA file and a client certificate. They
// come from flags or the environment (CredentialsFromEnv), never from a
// run's files: optimize keeps none of them in run.json or args.json.
type Credentials struct {
	User, Password string
	Token          string
	// NKeySeed is a file holding an NKey seed (SU...).
	NKeySeed string
	// CredsFile is a credentials file (a user JWT and its seed), as nsc
	// writes them.
	CredsFile string
	// CA is a PEM file of the certificate authorities to trust; Cert and
	// Key are the client's certificate and key (both or neither).
	CA, Cert, Key string
}

// The environment variables CredentialsFromEnv reads.
const (
	EnvUser     = "NFBO_NATS_USER"
	EnvPassword = "NFBO_NATS_PASSWORD"
	EnvToken    = "NFBO_NATS_TOKEN"
	EnvNKey     = "NFBO_NATS_NKEY"
	EnvCreds    = "NFBO_NATS_CREDS"
	EnvCA       = "NFBO_NATS_CA"
	EnvCert     = "NFBO_NATS_CERT"
	EnvKey      = "NFBO_NATS_KEY"
)

// CredentialsFromEnv reads the NFBO_NATS_* variables through getenv
// (os.Getenv, or a map in a test).
func CredentialsFromEnv(getenv func(string) string) Credentials {
	return Credentials{
		User: getenv(EnvUser), Password: getenv(EnvPassword), Token: getenv(EnvToken),
		NKeySeed: getenv(EnvNKey), CredsFile: getenv(EnvCreds),
		CA: getenv(EnvCA), Cert: getenv(EnvCert), Key: getenv(EnvKey),
	}
}

func (c Credentials) hasAuth() bool {
	return c.User != "" || c.Password != "" || c.Token != "" || c.NKeySeed != "" || c.CredsFile != ""
}

// Or returns c completed from d: d's way of authenticating when c has
// none (the two are not mixed, so that a token in the environment does not
// join a user given by a flag), and each TLS file of d that c lacks.
func (c Credentials) Or(d Credentials) Credentials {
	if !c.hasAuth() {
		c.User, c.Password, c.Token, c.NKeySeed, c.CredsFile = d.User, d.Password, d.Token, d.NKeySeed, d.CredsFile
	}
	for _, p := range []struct {
		dst *string
		src string
	}{{&c.CA, d.CA}, {&c.Cert, d.Cert}, {&c.Key, d.Key}} {
		if *p.dst == "" {
			*p.dst = p.src
		}
	}
	return c
}

// Check reports credentials that cannot work: two ways of authenticating,
// a password without a user, a certificate without its key.
func (c Credentials) Check() error {
	var ways []string
	if c.User != "" || c.Password != "" {
		if c.User == "" {
			return errors.New("queue: a NATS password without a user")
		}
		ways = append(ways, "user and password")
	}
	if c.Token != "" {
		ways = append(ways, "token")
	}
	if c.NKeySeed != "" {
		ways = append(ways, "NKey seed")
	}
	if c.CredsFile != "" {
		ways = append(ways, "credentials file")
	}
	if len(ways) > 1 {
		return fmt.Errorf("queue: give one way of authenticating to NATS, not %s", strings.Join(ways, " and "))
	}
	if (c.Cert == "") != (c.Key == "") {
		return errors.New("queue: a TLS client certificate needs its key, and a key its certificate")
	}
	return nil
}

// String describes the credentials without their secrets, e.g. "user
// alice, password, CA ca.pem".
func (c Credentials) String() string {
	var parts []string
	if c.User != "" {
		parts = append(parts, "user "+c.User)
	}
	if c.Password != "" {
		parts = append(parts, "password")
	}
	if c.Token != "" {
		parts = append(parts, "token")
	}
	if c.NKeySeed != "" {
		parts = append(parts, "NKey seed "+c.NKeySeed)
	}
	if c.CredsFile != "" {
		parts = append(parts, "credentials "+c.CredsFile)
	}
	if c.CA != "" {
		parts = append(parts, "CA "+c.CA)
	}
	if c.Cert != "" {
		parts = append(parts, "certificate "+c.Cert)
	}
	if len(parts) == 0 {
		return "no credentials"
	}
	return strings.Join(parts, ", ")
}

// GoString keeps the secrets out of %#v too.
func (c Credentials) GoString() string { return "queue.Credentials{" + c.String() + "}" }

func (c Credentials) options() ([]nats.Option, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	var opts []nats.Option
	switch {
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	case c.NKeySeed != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("queue: NKey seed %s: %w", c.NKeySeed, err)
		}
		opts = append(opts, o)
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.CA != "" {
		opts = append(opts, nats.RootCAs(c.CA))
	}
	if c.Cert != "" {
		opts = append(opts, nats.ClientCert(c.Cert, c.Key))
	}
	return opts, nil
}

// SplitURL takes the user and password (or token) out of a server URL, or
// of each URL of a comma-separated list, and returns the URLs without them
// and the credentials found, so that a URL can be kept in a run's files
// and shown in messages. A user without a password is a token, as NATS
// reads nats://TOKEN@host.
func SplitURL(raw string) (string, Credentials, error) {
	var c Credentials
	var out []string
	for _, s := range strings.Split(raw, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return "", c, fmt.Errorf("queue: NATS server URL: %w", err)
		}
		if u.Host == "" {
			return "", c, fmt.Errorf("queue: NATS server URL %q names no host", s)
		}
		if u.User != nil {
			var found Credentials
			if p, ok := u.User.Password(); ok {
				found.User, found.Password = u.User.Username(), p
			} else {
				found.Token = u.User.Username()
			}
			if c.hasAuth() && (found != c) {
				return "", c, errors.New("queue: the NATS server URLs carry different credentials")
			}
			c = found
			u.User = nil
		}
		out = append(out, u.String())
	}
	if len(out) == 0 {
		return "", c, errors.New("queue: no NATS server URL")
	}
	return strings.Join(out, ","), c, nil
}

// ConnectOptions configure Connect.
type ConnectOptions struct {
	Credentials Credentials
	// Name is the client's name in the server's monitoring, e.g. "nfbo
	// worker (host 1234)".
	Name string
	// Warnf is told when the connection is lost and found again. If nil,
	// nothing is told.
	Warnf func(format string, args ...any)
}

// Connect connects to the NATS server(s) at url (comma-separated). It fails
// when no server answers now; once connected, the connection is re-made
// for as long as it takes when a server goes away (a restart, a network
// cut), and the operations of this package wait for it.
func Connect(url string, opts ConnectOptions) (*nats.Conn, error) {
	copts, err := opts.Credentials.options()
	if err != nil {
		return nil, err
	}
	warnf := opts.Warnf
	if warnf == nil {
		warnf = func(string, ...any) {}
	}
	copts = append(copts,
		nats.Name(opts.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.Timeout(10*time.Second),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				warnf("queue: lost the connection to the NATS server (%v); reconnecting", err)
			} else if !nc.IsClosed() {
				warnf("queue: lost the connection to the NATS server; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			warnf("queue: reconnected to the NATS server %s", nc.ConnectedUrlRedacted())
		}),
	)
	nc, err := nats.Connect(url, copts...)
	if err != nil {
		shown := url
		if clean, _, err := SplitURL(url); err == nil {
			shown = clean
		}
		return nil, fmt.Errorf("queue: connecting to NATS at %s: %w", shown, err)
	}
	return nc, nil
}

// DefaultConnectWait is how long a client that starts before its NATS server waits for it (ConnectWaiting): the
// default of -connect-wait for nfbo worker, optimize and serve.
const DefaultConnectWait = 10 * time.Minute

// ConnectWaiting is Connect for a client that may start before its server (workers started with the machine,
// the server after them): while no server answers it tries again, after 0.5 s, 1 s, 2 s and so on up to 30 s
// between tries, for at most wait in all, saying so through opts.Warnf before each wait. Other errors
// (credentials, TLS) and a cancelled ctx end it at once; wait 0 tries once.
func ConnectWaiting(ctx context.Context, url string, opts ConnectOptions, wait time.Duration) (*nats.Conn, error) {
	warnf := opts.Warnf
	if warnf == nil {
		warnf = func(string, ...any) {}
	}
	shown := url
	if clean, _, err := SplitURL(url); err == nil {
		shown = clean
	}
	deadline := time.Now().Add(wait)
	for pause := 500 * time.Millisecond; ; pause = min(2*pause, 30*time.Second) {
		nc, err := Connect(url, opts)
		if err == nil || !errors.Is(err, nats.ErrNoServers) {
			return nc, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("%w; gave up after waiting %v for it", err, wait)
		}
		pause = min(pause, left)
		warnf("queue: no NATS server answers at %s yet; trying again in %v (for %v more)", shown, pause, left.Round(time.Second))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("queue: waiting for the NATS server at %s: %w", shown, ctx.Err())
		case <-time.After(pause):
		}
	}
}
