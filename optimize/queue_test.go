package optimize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/nfbo/nfbo/chem/objective/queue"
	"github.com/nfbo/nfbo/rundir"
)

// args.json keeps -queue and none of the NATS credentials.
func TestArgsQueueCredentials(t *testing.T) {
	dir := t.TempDir()
	a := Args{RunArgs: RunArgs{Init: "init.csv", Model: "model", Out: dir}, ObjectiveArgs: ObjectiveArgs{Task: "demo", Queue: "nats://host:4222", QueueCredentials: queue.Credentials{User: "alice", Password: "Xyzzy1", Token: "Plugh2", NKeySeed: "seed.nk"}}}
	if err := WriteArgs(a); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, rundir.ArgsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"alice", "Xyzzy1", "Plugh2", "seed.nk"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("args.json holds %q:\n%s", secret, b)
		}
	}
	got, err := ReadArgs(dir)
	if err != nil || got.Queue != a.Queue {
		t.Errorf("Queue %q read back (%v), want %q", got.Queue, err, a.Queue)
	}
}

// The run id is the same for the same run directory and task, and another for another of either.
func TestQueueRunID(t *testing.T) {
	dir := t.TempDir()
	id := func(out, task string) string {
		s, err := queueRunID(Args{RunArgs: RunArgs{Out: out}, ObjectiveArgs: ObjectiveArgs{Task: task}})
		if err != nil {
			t.Fatal(err)
		}
		if !queue.ValidRunID(s) {
			t.Fatalf("run id %q is not valid", s)
		}
		return s
	}
	a := id(filepath.Join(dir, "run"), "qed")
	if b := id(filepath.Join(dir, "x", "..", "run"), "qed"); b != a {
		t.Errorf("the same directory spelt otherwise: %s, want %s", b, a)
	}
	if b := id(filepath.Join(dir, "run2"), "qed"); b == a {
		t.Error("another directory has the same run id")
	}
	if b := id(filepath.Join(dir, "run"), "logp"); b == a {
		t.Error("another task has the same run id")
	}
}
