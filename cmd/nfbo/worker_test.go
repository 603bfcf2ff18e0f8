package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/nfbo/nfbo/chem/objective/queue"
	"github.com/nfbo/nfbo/model/modeltest"
)

// needPython skips the test when python3 is not on PATH, and fails it instead under CI=true (DEVELOPERS.md).
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 missing: %v", err)
		}
		t.Skipf("python3 missing: %v", err)
	}
}

// startNATS starts an embedded nats-server with JetStream on a random port, asking clients for token when it is
// not empty, and returns its URL.
func startNATS(t *testing.T, token string) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Authorization: token})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server did not start within 20s")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

func TestWorkerCmdUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-task", "qed"},
		{"-queue", "nats://127.0.0.1:1"},
		{"-queue", "nats://127.0.0.1:1", "-task", "qed", "-concurrency", "0"},
		{"-queue", "nats://127.0.0.1:1", "-task", "qed", "-max-deliver", "0"},
		{"-queue", "nats://127.0.0.1:1", "-task", "qed", "-nats-password", "pw"},
		{"-queue", "nats://127.0.0.1:1", "-task", "qed", "-nats-token", "a", "-nats-user", "u"},
		{"-queue", "nats://127.0.0.1:1", "-task", "qed", "-nats-cert", "c.pem"},
		{"-queue", "nats://127.0.0.1:1", "-task", "qed", "extra"},
	} {
		_, _, err := runCmd(t, newWorkerCmd(), "", args...)
		if exitCode(err) != 2 {
			t.Errorf("%v: %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
}

// TestNATSCredentials: the flags win over the URL, the URL over the environment, and the URL comes back without
// its password.
func TestNATSCredentials(t *testing.T) {
	t.Setenv(queue.EnvToken, "from-env")
	t.Setenv(queue.EnvCA, "env-ca.pem")
	url, c, err := natsCredentials("nats://alice:pw@host:4222", queue.Credentials{})
	if err != nil || url != "nats://host:4222" || c.User != "alice" || c.Password != "pw" || c.Token != "" || c.CA != "env-ca.pem" {
		t.Errorf("URL with a password: %q %#v %v", url, c, err)
	}
	url, c, err = natsCredentials("host:4222", queue.Credentials{NKeySeed: "seed.nk"})
	if err != nil || url != "nats://host:4222" || c.NKeySeed != "seed.nk" || c.Token != "" {
		t.Errorf("an NKey flag: %q %#v %v", url, c, err)
	}
	_, c, err = natsCredentials("nats://host:4222", queue.Credentials{})
	if err != nil || c.Token != "from-env" {
		t.Errorf("the environment: %#v %v", c, err)
	}
	if s := fmt.Sprintf("%v %#v", queue.Credentials{User: "alice", Password: "Xyzzy1", Token: "Plugh2"}, queue.Credentials{Password: "Xyzzy1"}); strings.Contains(s, "Xyzzy1") || strings.Contains(s, "Plugh2") {
		t.Errorf("String shows a secret: %q", s)
	}
}

// TestOptimizeQueue runs "nfbo optimize -queue" against two "nfbo worker" commands with the protocol's example
// program, on a server that asks for a token (given in the environment, as a user would): the run spends its
// budget, each molecule once, and no file of the run directory holds the token.
func TestOptimizeQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("an optimiser run and two workers with Python programs")
	}
	needPython(t)
	const token = "s3cret-t0ken"
	url := startNATS(t, token)
	t.Setenv(queue.EnvToken, token)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle := lengthOracle(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	outs := make([]*bytes.Buffer, 2)
	for i := range outs {
		outs[i] = &bytes.Buffer{}
		w := newWorkerCmd()
		w.Stdout, w.Stderr, w.Stdin = outs[i], outs[i], strings.NewReader("")
		wg.Go(func() {
			err := w.Execute(ctx, []string{"-queue", url, "-task", "demo", "-objective-cmd", oracle, "-concurrency", "2"})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("worker %d: %v, want it to stop when cancelled", i, err)
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			for i, o := range outs {
				t.Logf("worker %d:\n%s", i, o)
			}
		}
	}()

	out := filepath.Join(dir, "run")
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-queue", url, "-task", "demo", "-objective-cmd", oracle, "-init", guacamol100,
		"-init-count", "20", "-budget", "30", "-candidates", "200", "-model", dir, "-out", out)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if err != nil {
		t.Fatal(err)
	}
	smiles, scores := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
	if len(smiles) != 30 {
		t.Errorf("%d calls, want 30", len(smiles))
	}
	seen := map[string]bool{}
	for i, s := range smiles {
		if seen[s] {
			t.Errorf("%s paid twice", s)
		}
		seen[s] = true
		if scores[i] <= 0 {
			t.Errorf("%s scored %v", s, scores[i])
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the NATS token", e.Name())
		}
	}
	if args, _ := os.ReadFile(filepath.Join(out, "args.json")); !bytes.Contains(args, []byte(`"Queue": "`+url+`"`)) {
		t.Errorf("args.json does not keep the queue's URL:\n%s", args)
	}
}

// optimize -queue and serve -queue wait for a NATS server that does not answer yet, as the worker does, for
// -connect-wait, saying so, and then give up naming the wait.
func TestOptimizeAndServeWaitForServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port where no server answers
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
	l.Close()
	run := []string{"-task", "qed", "-init", guacamol100, "-init-count", "20", "-budget", "40", "-model", dir,
		"-queue", url, "-connect-wait", "1500ms"}
	for _, c := range []struct {
		name string
		cmd  *Command
		args []string
	}{
		{"optimize", newOptimizeCmd(), append([]string{"-out", filepath.Join(dir, "opt")}, run...)},
		{"serve", newServeCmd(), append([]string{"-run", filepath.Join(dir, "srv"), "-addr", "127.0.0.1:0"}, run...)},
	} {
		start := time.Now()
		_, stderr, err := runCmd(t, c.cmd, "", c.args...)
		if err == nil || !strings.Contains(err.Error(), "gave up after waiting 1.5s") || !strings.Contains(stderr, "no NATS server answers at "+url+" yet") {
			t.Errorf("%s with no server and -connect-wait 1.5s: %v after %v\n%s", c.name, err, time.Since(start), stderr)
		}
	}
	if _, _, err := runCmd(t, newOptimizeCmd(), "", append([]string{"-out", filepath.Join(dir, "neg"), "-connect-wait", "-1s"}, run[:len(run)-2]...)...); err == nil ||
		!strings.Contains(err.Error(), "-connect-wait must not be negative") {
		t.Errorf("a negative -connect-wait: %v", err)
	}
}

// TestWorkerWaitsForServer: a worker started before its NATS server exited in 0.19 s and never tried again; it
// waits, saying so, connects once the server is up, and gives up after -connect-wait (issue #56).
func TestWorkerWaitsForServer(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port, for the server to come later
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)

	start := time.Now()
	_, stderr, err := runCmd(t, newWorkerCmd(), "", "-queue", url, "-task", "demo", "-objective-cmd", lengthOracle(t, dir), "-connect-wait", "1500ms")
	if err == nil || !strings.Contains(err.Error(), "gave up after waiting 1.5s") || !strings.Contains(stderr, "trying again in") {
		t.Errorf("no server for -connect-wait 1.5s: %v after %v\n%s", err, time.Since(start), stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newLockedBuffer()
	w := newWorkerCmd()
	w.Stdout, w.Stderr, w.Stdin = out, out, strings.NewReader("")
	done := make(chan error, 1)
	go func() {
		done <- w.Execute(ctx, []string{"-queue", url, "-task", "demo", "-objective-cmd", lengthOracle(t, dir)})
	}()
	time.Sleep(1500 * time.Millisecond)
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "nfbo worker: scoring task demo"); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the worker stopped: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not connect within 30 s of the server's start:\n%s", out)
		}
	}
	if !strings.Contains(out.String(), "no NATS server answers at "+url+" yet") {
		t.Errorf("the worker did not say it was waiting:\n%s", out)
	}
	cancel()
	<-done
}
