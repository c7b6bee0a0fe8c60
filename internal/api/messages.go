package api

// MessageUnavailable is the message of every unavailable answer: what a
// client may know, and nothing of why (an address, a driver's error).
const MessageUnavailable = "the shop cannot reach its database or lock service, try again"
