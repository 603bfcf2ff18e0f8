package train

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Header is what a pretraining run says when it starts or resumes: the first line of each run in its log.
type Header struct {
	Molecules, Skipped, Train, Val int
	V, T                           int
	Transform                      string
	Params                         int
	BLAS                           string
	From, To                       int64 // steps
	Batch                          int
}

// FormatHeader returns h as the log's header line; ParseLog reads it back.
func FormatHeader(h Header) string {
	return fmt.Sprintf("pretrain: %d molecules (%d skipped): %d train, %d validation; V=%d T=%d, %s, %d parameters, BLAS %s; steps %d → %d, batch %d",
		h.Molecules, h.Skipped, h.Train, h.Val, h.V, h.T, h.Transform, h.Params, h.BLAS, h.From, h.To, h.Batch)
}

// FormatStep returns p as the log's step line; ParseLog reads it back.
func FormatStep(p Progress) string {
	line := fmt.Sprintf("step %d/%d epoch %d loss %.4f nll/token %.4f sim/token %.4f %.1f seq/s left %s",
		p.Step, p.TotalSteps, p.Epoch, p.Loss, p.NLL, p.Sim, p.SeqPerSec, p.Remaining.Round(time.Second))
	if p.Val != nil {
		line += fmt.Sprintf(" | val nll/token %.4f sim/token %.4f", p.Val.NLL, p.Val.Sim)
		if p.Val.EmbedCos != 0 {
			line += fmt.Sprintf(" | embed cos %.6f", p.Val.EmbedCos)
		}
	}
	if p.Recon != nil {
		line += fmt.Sprintf(" | recon %d/%d", p.Recon.OK, p.Recon.N)
	}
	if p.LR != 0 {
		line += fmt.Sprintf(" | lr %.4g", p.LR)
	}
	if p.Checkpoint {
		line += " | checkpoint"
	}
	return line
}

// Log is a pretraining log as "nfbo pretrain" writes it (FormatHeader and FormatStep lines among others): one point per
// logged optimiser step, in increasing step order.
type Log struct {
	// Batch is the batch size and TrainSize the number of training
	// sequences, both from the last header line; 0 when the log has none.
	Batch, TrainSize int
	// Consistent is false when header lines disagree on Batch or TrainSize,
	// so that sequences seen cannot be computed from the step alone.
	Consistent bool
	// Points holds the logged steps, sorted by step, one per step.
	Points []LogPoint
	// TornLine is the number of a last line without its newline (one being
	// written), which is left out, and TornBytes its length; 0 if none.
	TornLine, TornBytes int
}

// LogPoint is one step line of a pretraining log (FormatStep).
type LogPoint struct {
	Step, Epoch int64
	// Loss is the training loss of the step's batch (per sequence); NLL
	// (nats) and Sim are per token.
	Loss, NLL, Sim float64
	// HasVal says whether the line carries a validation result, ValNLL and
	// ValSim, computed on the held-out set after the step.
	HasVal         bool
	ValNLL, ValSim float64
	// EmbedCos is the largest cosine between two token embeddings at the
	// validation (0 in logs that predate it); ReconOK of ReconN validation
	// molecules reconstructed (ReconN 0: not checked).
	EmbedCos        float64
	ReconOK, ReconN int
	// LR is the learning rate of the step when the log gives it (a scheduled rate, Anneal), else 0.
	LR float64
	// Line is the line number in the log (from 1).
	Line int
}

// NumVal returns the number of points with a validation result.
func (lg *Log) NumVal() int {
	n := 0
	for _, p := range lg.Points {
		if p.HasVal {
			n++
		}
	}
	return n
}

// SeqsSeen returns the number of training sequences consumed after p's step:
// each epoch visits the TrainSize sequences in batches of Batch, the last
// batch partial. ok is false when the log lacks a consistent header.
func (lg *Log) SeqsSeen(p LogPoint) (n int64, ok bool) {
	if !lg.Consistent || lg.Batch <= 0 || lg.TrainSize <= 0 {
		return 0, false
	}
	b, size := int64(lg.Batch), int64(lg.TrainSize)
	perEpoch := (size + b - 1) / b
	within := p.Step - p.Epoch*perEpoch
	if within < 1 || within > perEpoch {
		return 0, false
	}
	return p.Epoch*size + min(within*b, size), true
}

// headerLine matches FormatHeader's line.
var headerLine = regexp.MustCompile(`^pretrain: \d+ molecules \(\d+ skipped\): (\d+) train, \d+ validation; .*; steps (\d+) → \d+, batch (\d+)$`)

// ParseLog reads a pretraining log from r; name is used in errors,
// which have the form "NAME:LINE: reason". Step lines ("step S/N epoch E
// loss L nll/token X sim/token Y ...", optionally followed by " | val
// nll/token X sim/token Y", " | embed cos C", " | recon OK/N", " | lr RATE" and " | checkpoint") give the points. A header
// line "pretrain: ... steps K → N, batch B" starts a run at step K and drops
// the points after K logged before it; a step logged again replaces the
// earlier point. Other lines are ignored. A log without step lines is an error.
func ParseLog(name string, r io.Reader) (*Log, error) {
	lg := &Log{Consistent: true}
	byStep := map[int64]LogPoint{}
	headers := 0
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	text := string(data)
	if i := strings.LastIndexByte(text, '\n'); i+1 < len(text) {
		// The last line has no newline: "nfbo pretrain" is still writing it (or was stopped in the middle of
		// it). It is left out, whole, even when it parses: a number cut short would.
		lg.TornLine, lg.TornBytes = strings.Count(text, "\n")+1, len(text)-(i+1)
		text = text[:i+1]
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for i, raw := range lines {
		line := i + 1
		text := strings.TrimRight(raw, "\r")
		if m := headerLine.FindStringSubmatch(text); m != nil {
			size, err1 := strconv.Atoi(m[1])
			start, err2 := strconv.ParseInt(m[2], 10, 64)
			batch, err3 := strconv.Atoi(m[3])
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, fmt.Errorf("%s:%d: header line: %w", name, line, err)
			}
			if headers > 0 && (size != lg.TrainSize || batch != lg.Batch) {
				lg.Consistent = false
			}
			headers++
			lg.TrainSize, lg.Batch = size, batch
			for s := range byStep {
				if s > start {
					delete(byStep, s)
				}
			}
			continue
		}
		if text != "step" && !strings.HasPrefix(text, "step ") {
			continue
		}
		p, err := parseStepLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		p.Line = line
		byStep[p.Step] = p
	}
	if len(byStep) == 0 {
		return nil, fmt.Errorf("%s: no step lines", name)
	}
	for _, p := range byStep {
		lg.Points = append(lg.Points, p)
	}
	slices.SortFunc(lg.Points, func(a, b LogPoint) int { return cmp.Compare(a.Step, b.Step) })
	return lg, nil
}

// parseStepLine parses one progress line of "nfbo pretrain".
func parseStepLine(text string) (LogPoint, error) {
	var p LogPoint
	segs := strings.Split(text, " | ")
	f := strings.Fields(segs[0])
	// step S/N epoch E loss L nll/token X sim/token Y R seq/s left D
	if len(f) < 10 || f[0] != "step" || f[2] != "epoch" || f[4] != "loss" || f[6] != "nll/token" || f[8] != "sim/token" {
		return p, fmt.Errorf("malformed step line %s: want \"step S/N epoch E loss L nll/token X sim/token Y ...\"", quoteClip(text))
	}
	stepStr, _, _ := strings.Cut(f[1], "/")
	var errs [5]error
	p.Step, errs[0] = strconv.ParseInt(stepStr, 10, 64)
	p.Epoch, errs[1] = strconv.ParseInt(f[3], 10, 64)
	p.Loss, errs[2] = strconv.ParseFloat(f[5], 64)
	p.NLL, errs[3] = strconv.ParseFloat(f[7], 64)
	p.Sim, errs[4] = strconv.ParseFloat(f[9], 64)
	if err := errors.Join(errs[:]...); err != nil {
		return p, fmt.Errorf("malformed step line %s: %w", quoteClip(text), err)
	}
	if p.Step < 1 || p.Epoch < 0 {
		return p, fmt.Errorf("malformed step line %s: step %d, epoch %d", quoteClip(text), p.Step, p.Epoch)
	}
	for _, seg := range segs[1:] {
		v := strings.Fields(seg)
		switch {
		case len(v) == 1 && v[0] == "checkpoint":
		case len(v) == 2 && v[0] == "lr":
			lr, err := strconv.ParseFloat(v[1], 64)
			if err != nil || !(lr > 0) {
				return p, fmt.Errorf("malformed learning-rate part %s: want \"lr RATE\" with a positive rate", quoteClip(seg))
			}
			p.LR = lr
		case len(v) == 3 && v[0] == "embed" && v[1] == "cos":
			c, err := strconv.ParseFloat(v[2], 64)
			if err != nil {
				return p, fmt.Errorf("malformed embedding part %s: %w", quoteClip(seg), err)
			}
			p.EmbedCos = c
		case len(v) == 2 && v[0] == "recon":
			a, b, found := strings.Cut(v[1], "/")
			ok, e1 := strconv.Atoi(a)
			n, e2 := strconv.Atoi(b)
			if !found || e1 != nil || e2 != nil || ok < 0 || n < 1 || ok > n {
				return p, fmt.Errorf("malformed reconstruction part %s: want \"recon OK/N\"", quoteClip(seg))
			}
			p.ReconOK, p.ReconN = ok, n
		case len(v) == 5 && v[0] == "val" && v[1] == "nll/token" && v[3] == "sim/token":
			var e1, e2 error
			p.ValNLL, e1 = strconv.ParseFloat(v[2], 64)
			p.ValSim, e2 = strconv.ParseFloat(v[4], 64)
			if err := errors.Join(e1, e2); err != nil {
				return p, fmt.Errorf("malformed validation part %s: %w", quoteClip(seg), err)
			}
			p.HasVal = true
		default:
			return p, fmt.Errorf("malformed step line: unknown part %s", quoteClip(seg))
		}
	}
	return p, nil
}

// quoteClip returns s as a Go string literal, clipped to its first 80 bytes with its length after an ellipsis,
// so that a malformed line of any length or content reaches a terminal short and escaped.
func quoteClip(s string) string {
	const max = 80
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
