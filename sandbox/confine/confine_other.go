//go:build !linux

package confine

func probe() Support { return Support{} }

func apply(Spec) error {
	return &Error{Mechanism: MechanismPlatform, Err: ErrUnsupported}
}

func setRlimits(Rlimits) error {
	return &Error{Mechanism: MechanismPlatform, Err: ErrUnsupported}
}
