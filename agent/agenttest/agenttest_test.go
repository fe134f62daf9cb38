package agenttest_test

import (
	"os"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agenttest"
	"github.com/reinhq/rein/sandbox"
)

// inProcess is rein's own driver.
var inProcess = agenttest.Driver{Name: "in-process", Run: agent.Run, Resume: agent.Resume}

func TestMain(m *testing.M) {
	sandbox.Main()
	if code, ok := agenttest.Child(inProcess); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestInProcessDriver(t *testing.T) { agenttest.Run(t, inProcess) }
