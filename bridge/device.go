package bridge

import "time"

// Device states, as DeviceStatus.State holds them.
const (
	// DeviceWaiting: the device has not been polled yet.
	DeviceWaiting = "waiting"
	// DeviceOK: the device's last poll was answered in full.
	DeviceOK = "ok"
	// DeviceFailing: the device's last request failed (no answer, an
	// exception, a bad frame).
	DeviceFailing = "failing"
)

// DeviceStatus is one device behind a bridge (a Modbus slave on its bus),
// as /bridgez lists it.
type DeviceStatus struct {
	// Name is the device's configured name.
	Name string
	// State is DeviceWaiting, DeviceOK or DeviceFailing.
	State string
	// Polls counts complete polls (every read answered).
	Polls uint64
	// MissedPolls counts slots of the device's poll schedule that passed
	// without a poll, because the one before overran.
	MissedPolls uint64
	// Timeouts, Exceptions and BadFrames count failed requests: no
	// answer in time, a protocol exception, a malformed frame.
	Timeouts, Exceptions, BadFrames uint64
	// Writes counts write requests the device accepted.
	Writes uint64
	// LastError is the device's last failure and LastErrorAt its time;
	// both are zero while it had none.
	LastError   string
	LastErrorAt time.Time
	// LastException names the last protocol exception ("illegal data
	// address"); "" when there was none.
	LastException string
}

// DeviceLister is implemented by a Bridge that talks to several devices
// of its own (the Modbus bridge); Registry.Statuses reports their status
// beside the bridge's. Its method is safe to call while Run runs.
type DeviceLister interface {
	// DeviceStatuses returns each device's status, in configuration
	// order.
	DeviceStatuses() []DeviceStatus
}
