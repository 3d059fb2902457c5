package modbus

import "sort"

// The most one request may read (MODBUS Application Protocol 1.1b3
// §6.1–6.4: 2000 coils or discrete inputs, 125 registers).
const (
	maxReadBits  = 2000
	maxReadWords = 125
)

// block is one read request: a run of contiguous addresses in one table,
// and the registers it covers.
type block struct {
	table    string
	address  uint16
	quantity uint16
	// regs index the device's registers, with each one's offset in the
	// block.
	regs []blockReg
}

type blockReg struct {
	index  int
	offset int
}

// plan groups a device's polled registers (those with a subject) into
// as few reads as the protocol allows: registers of one table whose
// addresses touch or overlap share a request, up to the size limit.
func plan(regs []Register) []block {
	order := make([]int, 0, len(regs))
	for i, r := range regs {
		if r.Subject != "" {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := regs[order[a]], regs[order[b]]
		if ra.Table != rb.Table {
			return ra.Table < rb.Table
		}
		return ra.Address < rb.Address
	})
	var blocks []block
	for _, i := range order {
		r := regs[i]
		limit := maxReadWords
		if r.bits() {
			limit = maxReadBits
		}
		end := int(r.Address) + r.words()
		if n := len(blocks); n > 0 {
			b := &blocks[n-1]
			bEnd := int(b.address) + int(b.quantity)
			if b.table == r.Table && int(r.Address) <= bEnd && max(end, bEnd)-int(b.address) <= limit {
				b.quantity = uint16(max(end, bEnd) - int(b.address))
				b.regs = append(b.regs, blockReg{index: i, offset: int(r.Address - b.address)})
				continue
			}
		}
		blocks = append(blocks, block{table: r.Table, address: r.Address, quantity: uint16(r.words()),
			regs: []blockReg{{index: i}}})
	}
	return blocks
}
