package selfies

import (
	"fmt"

	"github.com/nfbo/nfbo/chem/smiles"
)

// DecodeError reports a SELFIES string that cannot be decoded. Index is the
// 0-based position of the offending symbol among the symbols the decoder
// reads (Split order, "." included), Offset its byte offset.
type DecodeError struct {
	Symbol string
	Index  int
	Offset int
	Reason string
}

// Error formats the error with the symbol, its index and offset.
func (e *DecodeError) Error() string {
	if e.Symbol == "" {
		return fmt.Sprintf("selfies: decode: %s (symbol %d, offset %d)", e.Reason, e.Index, e.Offset)
	}
	return fmt.Sprintf("selfies: decode: %s %s (symbol %d, offset %d)", e.Reason, smiles.Quote(e.Symbol), e.Index, e.Offset)
}

// EncodeError reports a SMILES string that cannot be encoded. Offset is the
// byte offset of the fault in the SMILES, or -1 when the fault is not at one
// place (kekulisation, constraint violations). Err is the underlying error,
// such as a *smiles.SyntaxError, if any.
type EncodeError struct {
	SMILES string
	Offset int
	Reason string
	Err    error
}

// Error formats the error with the SMILES (quoted and clipped by
// smiles.Quote) and, if known, the offset.
func (e *EncodeError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("selfies: encode %s: %s (offset %d)", smiles.Quote(e.SMILES), e.Reason, e.Offset)
	}
	return fmt.Sprintf("selfies: encode %s: %s", smiles.Quote(e.SMILES), e.Reason)
}

// Unwrap returns the underlying error.
func (e *EncodeError) Unwrap() error { return e.Err }
