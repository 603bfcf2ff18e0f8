package pretrain

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/engine/train"
)

// readTestLog parses engine/train's test log of three runs (see its log_test.go).
func readTestLog(t *testing.T) *train.Log {
	t.Helper()
	const name = "../engine/train/testdata/pretrain.log"
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lg, err := train.ParseLog(name, f)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

// WriteCurves writes non-empty PNG and SVG files, and WriteValTable the validation rows as a Markdown table.
func TestCurves(t *testing.T) {
	lg := readTestLog(t)
	prefix := filepath.Join(t.TempDir(), "pretrain")
	files, err := WriteCurves(prefix, "pretrain.log", lg, 0)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %q, err %v", files, err)
	}
	png, err := os.ReadFile(prefix + ".png")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s.png: err %v, %d bytes, not a PNG", prefix, err, len(png))
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("%s.svg: err %v, %d bytes, not an SVG", prefix, err, len(svg))
	}
	var table bytes.Buffer
	if err := WriteValTable(&table, lg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| step | epoch | sequences seen |",
		"| 20 | 0 | 2560 | 9.0000 | 0.9000 | 0.1900 | 0.9500 | 0.1950 |",
		"| 30 | 1 | 3768 | 8.5000 | 0.8500 | 0.1850 | 0.8800 | 0.1880 |",
		"| 40 | 1 | 5048 | 6.0000 | 0.6000 | 0.1600 | 0.6200 | 0.1620 |",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "| 10 |") {
		t.Errorf("table shows step 10, which has no validation:\n%s", table.String())
	}
	if _, err := WriteCurves(prefix, "pretrain.log", lg, 100); err == nil {
		t.Error("from past the last step: no error")
	}
}

// The step axis is marked at round steps, labelled without needless decimals.
func TestNiceTicks(t *testing.T) {
	var labels []string
	for _, tk := range (niceTicks{}).Ticks(0, 1000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0 200 400 600 800 1000" {
		t.Errorf("labels %q", got)
	}
}
