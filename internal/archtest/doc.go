// Package archtest holds one test: every package of the module imports only
// what docs/ARCHITECTURE.md allows it to, so that page stays true as the code
// grows. A new package must be added to the table there and in allowed.
package archtest
