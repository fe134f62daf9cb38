package shell_test

import (
	"errors"
	"fmt"

	"github.com/reinhq/rein/shell"
)

func ExampleParse() {
	line, err := shell.Parse(`grep -n 'a b' "c\"d" | sort > out.txt && go test ./... ; cd src`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, p := range line.Pipelines {
		if i > 0 {
			fmt.Println(line.Connectors[i-1])
		}
		for _, st := range p.Stages {
			if st.Kind == shell.Cd {
				fmt.Printf("  cd %q\n", st.Dir)
				continue
			}
			fmt.Printf("  %q", st.Argv)
			for _, r := range st.Redirects {
				fmt.Printf(" fd %d %s %q", r.Fd, r.Op, r.Path)
			}
			fmt.Println()
		}
	}
	// Output:
	//   ["grep" "-n" "a b" "c\"d"]
	//   ["sort"] fd 1 > "out.txt"
	// &&
	//   ["go" "test" "./..."]
	// ;
	//   cd "src"
}

func ExampleRefusal() {
	_, err := shell.Parse("cat $(ls) > all.txt")
	var r *shell.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Construct, "at byte", r.Offset)
	}

	_, err = shell.Parse("FOO=1")
	if errors.As(err, &r) {
		fmt.Println(r.Construct, "at byte", r.Offset)
	}
	// Output:
	// command-substitution at byte 4
	// assignment at byte 0
}

func ExampleFromArgv() {
	line, err := shell.FromArgv([]string{"grep", "-e", "a;b", "*.go"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", line.Stages()[0].Argv)
	// Output:
	// ["grep" "-e" "a;b" "*.go"]
}
