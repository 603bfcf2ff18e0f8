//go:build !unix

package main

// lockRunDir does nothing where flock is not available.
func lockRunDir(dir string) (unlock func(), err error) { return func() {}, nil }
