package policy

// Class is how much a stage can do, as far as the class table can see from
// its argv. A line takes the strongest class of its stages.
type Class int

// Classes from weakest to strongest; the order is the comparison.
const (
	ReadOnly          Class = iota // reads, prints, inspects
	WorkspaceMutating              // writes inside the workspace, builds, tests
	Unknown                        // a program the table does not know
	ShellComplex                   // runs code the matcher cannot see
	Dangerous                      // destroys, escalates or leaves the machine
)

var classNames = [...]string{"read-only", "workspace-mutating", "unknown", "shell-complex", "dangerous"}

// String returns the class name used in configuration and JSON.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "invalid"
}

// stageFacts is what the class table reads from one stage's argv, before
// any path is resolved. Path arguments are returned as written; the caller
// resolves them against the modelled working directory.
type stageFacts struct {
	Class Class
	// Reason says why the stage has its class, in a few words a user can
	// read: "rm -r deletes recursively", "git with -c runs configured code".
	Reason string

	// Reads are path arguments the program reads.
	Reads []string
	// Writes are path arguments the program creates, modifies or moves onto.
	Writes []string
	// Deletes are path arguments the program removes.
	Deletes []string
	// OutsideDangerous are path arguments that make the stage dangerous
	// when they resolve outside the workspace (rm targets, ln -s link names,
	// chmod and chown targets).
	OutsideDangerous []string

	// Network is set for network clients (curl, wget).
	Network bool
	// Inline holds program text given on the command line (python -c,
	// node -e, perl -e, awk and sed programs), scanned word by word
	// against the protected set.
	Inline []string
	// HardDeny is non-empty when the argv alone is a hard deny (mkfs*, dd
	// onto a device); it says why.
	HardDeny string
	// ProgramFromStdin says the program reads the program it runs from
	// standard input (python3 with no script, sh -s): a here-document
	// there is program text, decided like -c's.
	ProgramFromStdin bool
	// PythonModule is the module python -m runs when the stage is decided
	// as that module's program (python -m pytest as pytest): a file or
	// package of that name where the stage runs would be imported first.
	PythonModule string
}

// MarshalText writes the class name.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }
