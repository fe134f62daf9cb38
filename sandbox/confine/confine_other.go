//go:build !linux

package confine

func probe() Support { return Support{} }

func apply(Spec) error {
	return &Error{Mechanism: MechanismPlatform, Err: ErrUnsupported}
}
