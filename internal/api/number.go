package api

import "strconv"

// Canonical reads a non-negative decimal integer of at most max written in
// its one canonical spelling: digits only, no sign, no leading zero (but
// "0" itself), no spaces. Every number the API takes in a path or a query
// is read by it, so that one value has one spelling: a cache, a log or a
// rate limit keyed by the text cannot be told apart from the number.
func Canonical(s string, max int64) (int64, bool) {
	if s == "" || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > max {
		return 0, false
	}
	return n, true
}
