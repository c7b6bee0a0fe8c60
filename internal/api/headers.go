package api

// HeaderArrivedAt is on every answer to a purchase: when the shop read the
// request (RFC 3339, to the microsecond, UTC). It is the buyer's arrival
// in the shop's first come, first served order: the waiting room orders
// places by it, and the load tester measures a sale's fairness by it.
const HeaderArrivedAt = "X-Arrived-At"

// ArrivedAtLayout is HeaderArrivedAt's time layout.
const ArrivedAtLayout = "2006-01-02T15:04:05.000000Z07:00"
