package app

// DefaultMinFreeDisk is the free space below which a discard-old outbox
// drops its oldest message for each new one (uplinks[].min_free_disk).
const DefaultMinFreeDisk = 32 << 20
