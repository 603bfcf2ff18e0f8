// Package archtest holds one test: every package of the module imports only
// what docs/ARCHITECTURE.md allows it to, so that page stays true as the code
// grows. The rules are read from that page's table of packages (parseRules),
// so a new package needs only its row there.
package archtest
