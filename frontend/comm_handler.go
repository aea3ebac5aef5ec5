package frontend

// CommHandlerSetter is implemented by the Comm values that Comms.Open
// returns. A comm opened from the kernel side has no CommOpener, so the
// frontend's later comm_msg and comm_close on it reach the handler set here
// (none set: they are dropped).
type CommHandlerSetter interface {
	SetHandler(CommHandler)
}
