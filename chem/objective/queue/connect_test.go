package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func TestSplitURL(t *testing.T) {
	for _, tc := range []struct {
		in, url string
		c       Credentials
		bad     bool
	}{
		{in: "nats://host:4222", url: "nats://host:4222"},
		{in: "host:4222", url: "nats://host:4222"},
		{in: "nats://alice:pw@host:4222", url: "nats://host:4222", c: Credentials{User: "alice", Password: "pw"}},
		{in: "nats://tok@host:4222", url: "nats://host:4222", c: Credentials{Token: "tok"}},
		{in: "nats://a:p@h1:4222, nats://a:p@h2:4222", url: "nats://h1:4222,nats://h2:4222", c: Credentials{User: "a", Password: "p"}},
		{in: "nats://a:p@h1:4222,nats://b:q@h2:4222", bad: true},
		{in: "", bad: true},
		{in: "nats://", bad: true},
	} {
		url, c, err := SplitURL(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil || url != tc.url || c != tc.c {
			t.Errorf("%q: %q %#v %v, want %q %#v", tc.in, url, c, err, tc.url, tc.c)
		}
	}
}

func TestCredentials(t *testing.T) {
	for _, c := range []Credentials{
		{Password: "pw"},
		{User: "u", Token: "t"},
		{Token: "t", CredsFile: "f"},
		{Cert: "c.pem"},
		{Key: "k.pem"},
	} {
		if c.Check() == nil {
			t.Errorf("%#v: no error", c)
		}
	}
	flags := Credentials{User: "u", Password: "p"}
	env := Credentials{Token: "t", CA: "ca.pem"}
	if got := flags.Or(env); got != (Credentials{User: "u", Password: "p", CA: "ca.pem"}) {
		t.Errorf("flags or env: %#v", got)
	}
	if got := (Credentials{}).Or(env); got != env {
		t.Errorf("nothing or env: %#v", got)
	}
	secret := Credentials{User: "u", Password: "Xyzzy1", Token: "Plugh2"}
	if s := fmt.Sprintf("%v %+v %#v %s", secret, secret, secret, secret); strings.Contains(s, "Xyzzy1") || strings.Contains(s, "Plugh2") {
		t.Errorf("the credentials print their secrets: %s", s)
	}
}

// TestConnectAuth: a server that asks for a user and password lets in a
// client with them, and refuses one without.
func TestConnectAuth(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, Username: "alice", Password: "Xyzzy1"})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer s.Shutdown()
	nc, err := Connect(s.ClientURL(), ConnectOptions{Credentials: Credentials{User: "alice", Password: "Xyzzy1"}})
	if err != nil {
		t.Fatalf("with the password: %v", err)
	}
	nc.Close()
	if _, err := Connect(s.ClientURL(), ConnectOptions{}); err == nil {
		t.Error("connected without the password")
	}
	_, err = Connect("nats://alice:Xyzzy1@127.0.0.1:1", ConnectOptions{})
	if err == nil || strings.Contains(err.Error(), "Xyzzy1") {
		t.Errorf("an unreachable server: %v, want an error without the password", err)
	}
}
