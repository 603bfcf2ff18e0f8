//go:build !unix

package atomicfile

// syncUnsupported: elsewhere a directory's sync is best effort.
func syncUnsupported(error) bool { return true }
