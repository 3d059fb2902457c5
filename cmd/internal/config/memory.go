package config

// MinMemoryLimit is the smallest memory_limit accepted: below it the
// garbage collector would run without pause, and a bare number (bytes)
// is more likely a forgotten unit.
const MinMemoryLimit = 16 << 20

// MemoryLimitSetting returns what memory_limit asks for: auto (unset:
// derive it from the board), or a limit in bytes, 0 meaning off.
func (c *Config) MemoryLimitSetting() (limit int64, auto bool) {
	if c.MemoryLimit == nil {
		return 0, true
	}
	return int64(*c.MemoryLimit), false
}

func (v *validator) memoryLimit() {
	m := v.c.MemoryLimit
	if m == nil || *m == 0 {
		return
	}
	if *m < 0 {
		v.errf("memory_limit", "must not be negative (0 turns the limit off)")
	} else if *m < MinMemoryLimit {
		v.errf("memory_limit", "%v is too small: at least %v, or 0 to turn it off", *m, Size(MinMemoryLimit))
	}
}
