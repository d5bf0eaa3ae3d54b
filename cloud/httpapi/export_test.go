package httpapi

// LeaseFraction is leaseFraction, for the external tests.
const LeaseFraction = leaseFraction
