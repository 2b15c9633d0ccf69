package main

// defaultGOGC is berth-reconciler's GOGC when its environment sets none
// (internal/gcdefault). Its heap is mostly long-lived informer caches,
// which the default goal (GOGC=100) lets RSS double: at 10,000 pods the
// peak RSS was 208–221 MiB with the default and 166 MiB with 50, for the
// same CPU until idle (docs/performance.md, "The idle reconciler's
// memory").
const defaultGOGC = 50
