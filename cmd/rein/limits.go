package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
)

// limitFlags are the resource limit flags of rein sandbox, exec and shell.
type limitFlags struct {
	memory, fileSize, tmpSize        string
	processes, cpuSeconds, openFiles int64
}

func (lf *limitFlags) register(f *pflag.FlagSet) {
	f.StringVar(&lf.memory, "memory", "", "memory limit of the whole process tree, swap included, e.g. 512MiB (a cgroup; refused where none can enforce it)")
	f.Int64Var(&lf.processes, "processes", 0, "limit on the tree's processes and threads (a cgroup; refused where none can enforce it)")
	f.Int64Var(&lf.cpuSeconds, "cpu-seconds", 0, "CPU time limit of each process, in seconds (rlimit)")
	f.Int64Var(&lf.openFiles, "open-files", 0, "limit on each process's open descriptors (rlimit)")
	f.StringVar(&lf.fileSize, "file-size", "", "size limit of any file written, e.g. 1GiB (rlimit)")
	f.StringVar(&lf.tmpSize, "tmp-size", "", "size of the private /tmp (bwrap rung; default: the memory limit, else 512MiB)")
}

// limits are the flags over base, the policy's limits (the zero value for
// rein sandbox): a flag may set a limit the policy leaves unset or lower
// one it sets, never raise it.
func (lf *limitFlags) limits(base policy.Limits, settings []policy.Setting) (sandbox.Limits, error) {
	l := base
	for _, f := range []struct {
		flag, key string
		size      string
		n         int64
		dst       *int64
	}{
		{flag: "memory", key: "limits.memory", size: lf.memory, dst: &l.MemoryBytes},
		{flag: "file-size", key: "limits.file_size", size: lf.fileSize, dst: &l.FileSizeBytes},
		{flag: "tmp-size", key: "limits.tmp_size", size: lf.tmpSize, dst: &l.TmpBytes},
		{flag: "processes", key: "limits.processes", n: lf.processes, dst: &l.Processes},
		{flag: "cpu-seconds", key: "limits.cpu_seconds", n: lf.cpuSeconds, dst: &l.CPUSeconds},
		{flag: "open-files", key: "limits.open_files", n: lf.openFiles, dst: &l.OpenFiles},
	} {
		v := f.n
		if f.size != "" {
			n, err := policy.ParseSize(f.size)
			if err != nil {
				return l, &exitError{exitUsage, fmt.Sprintf("--%s: %v", f.flag, err)}
			}
			v = n
		}
		if v < 0 {
			return l, &exitError{exitUsage, fmt.Sprintf("--%s must be a positive number, not %d", f.flag, v)}
		}
		if v == 0 {
			continue
		}
		if *f.dst != 0 && v > *f.dst {
			where := ""
			for _, s := range settings {
				if s.Key == f.key {
					where = fmt.Sprintf(" (%s layer, %s)", s.Layer, s.File)
				}
			}
			return l, &exitError{exitSandbox, fmt.Sprintf("--%s %d is above the policy's %s of %d%s: a flag may only lower a limit", f.flag, v, f.key, *f.dst, where)}
		}
		*f.dst = v
	}
	return l, nil
}

// sessionLimits are the limits a launched session and its tools run
// under: the policy's [limits], no flag lowering them.
func sessionLimits(pol *policy.Policy) (sandbox.Limits, error) {
	return (&limitFlags{}).limits(pol.Limits, pol.Settings)
}
