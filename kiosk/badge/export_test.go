package badge

// Margin is the blank border inside the printable area, for tests that
// check nothing is drawn in it.
const Margin = margin
