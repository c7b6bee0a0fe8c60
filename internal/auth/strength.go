package auth

import (
	"fmt"
	"math"
)

// MinSecretBits is the least a secret must score, in bits: its length
// times the Shannon entropy of its bytes. Random secrets of 32 hex or
// base64 characters or more score above it; 32 × "a" scores 0 and
// "password" four times 88.
const MinSecretBits = 100

// Weak says why a secret (an HMAC key, a ZooKeeper password) is too easy
// to guess though long enough: too few distinct bytes, or too little
// entropy in them; nil when it is not. Length is checked apart
// (MinSecretLen). It estimates from the secret itself, so it flags what
// a person types (a repeated letter, a word repeated), not every weak
// source: make secrets with a random generator.
func Weak(secret []byte) error {
	var counts [256]int
	for _, b := range secret {
		counts[b]++
	}
	distinct, bits := 0, 0.0
	for _, c := range counts {
		if c == 0 {
			continue
		}
		distinct++
		p := float64(c) / float64(len(secret))
		bits -= float64(c) * math.Log2(p)
	}
	if distinct < 8 || bits <= MinSecretBits {
		return fmt.Errorf("it looks made by hand: %d distinct bytes, about %.0f bits of entropy, fewer than %d: "+
			"make a random one, such as openssl rand -base64 33", distinct, bits, MinSecretBits)
	}
	return nil
}
