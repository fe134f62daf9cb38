package evidence_test

import (
	"fmt"

	"github.com/reinhq/rein/agent/evidence"
	"github.com/reinhq/rein/shell"
)

func ExampleGoTestLine() {
	p := shell.Parser{Home: "/home/rein"}
	for _, line := range []string{
		"go test -race ./...",
		"go test -run 'TestA|TestB' ./pkg",
		"go test -v ./...",
		"go test ./... | tee log",
	} {
		fmt.Println(evidence.GoTestLine(p, line))
	}
	// Output:
	// go test -json '-count=1' -race ./... true
	// go test -json '-count=1' -run 'TestA|TestB' ./pkg true
	// go test -json '-count=1' ./... true
	//  false
}

func ExampleReadGo() {
	// What go test -json printed when TestMain exited 0 before running
	// any test: the package passed, and no test ran.
	stream := `{"Action":"start","Package":"example.com/m"}
{"Action":"output","Package":"example.com/m","Output":"ok  \texample.com/m\t0.003s\n"}
{"Action":"pass","Package":"example.com/m","Elapsed":0.003}
`
	r, text, ok := evidence.ReadGo([]byte(stream))
	fmt.Printf("%v %v %+v\n", ok, r.Packages, r.Counts())
	fmt.Print(text)
	// Output:
	// true map[example.com/m:pass] {Run:0 Passed:0 Failed:0 Skipped:0}
	// ok  	example.com/m	0.003s
}

func ExampleNotRun() {
	declared := []evidence.Test{
		{Key: "example.com/m.TestAdd", File: "add_test.go"},
		{Key: "example.com/m.TestSub", File: "add_test.go"},
		{Key: "example.com/m.TestSlow", File: "add_test.go"},
	}
	// At the run's start TestAdd failed, TestSub passed, TestSlow skipped
	// itself.
	baseline := evidence.Report{Tests: map[string]evidence.Result{
		"example.com/m.TestAdd":  evidence.Fail,
		"example.com/m.TestSub":  evidence.Pass,
		"example.com/m.TestSlow": evidence.Skip,
	}}
	// Now TestAdd passes, and TestSub skips itself.
	attempt := evidence.Report{Tests: map[string]evidence.Result{
		"example.com/m.TestAdd":  evidence.Pass,
		"example.com/m.TestSub":  evidence.Skip,
		"example.com/m.TestSlow": evidence.Skip,
	}}
	fmt.Println(evidence.NotRun(declared, baseline, attempt))
	// Output:
	// [example.com/m.TestSub]
}
