package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/reinhq/rein/limits"
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
	flags := map[string]struct {
		flag, size string
		n          int64
	}{
		"memory": {flag: "memory", size: lf.memory}, "file_size": {flag: "file-size", size: lf.fileSize}, "tmp_size": {flag: "tmp-size", size: lf.tmpSize},
		"processes": {flag: "processes", n: lf.processes}, "cpu_seconds": {flag: "cpu-seconds", n: lf.cpuSeconds}, "open_files": {flag: "open-files", n: lf.openFiles},
	}
	var err error
	l.Each(func(key string, dst *int64) {
		f, ok := flags[key]
		if err != nil || !ok {
			return
		}
		v := f.n
		if f.size != "" {
			n, perr := policy.ParseSize(f.size)
			if perr != nil {
				err = &exitError{exitUsage, fmt.Sprintf("--%s: %v", f.flag, perr)}
				return
			}
			v = n
		}
		switch {
		case v < 0:
			err = &exitError{exitUsage, fmt.Sprintf("--%s must be a positive number, not %d", f.flag, v)}
		case v == 0:
		case limits.Bound(v, *dst) != v:
			// A flag may set a limit the policy leaves unset or lower one
			// it sets, never raise it.
			where := ""
			for _, s := range settings {
				if s.Key == "limits."+key {
					where = fmt.Sprintf(" (%s layer, %s)", s.Layer, s.File)
				}
			}
			err = &exitError{exitSandbox, fmt.Sprintf("--%s %d is above the policy's limits.%s of %d%s: a flag may only lower a limit", f.flag, v, key, *dst, where)}
		default:
			*dst = v
		}
	})
	return l, err
}

// sessionLimits are the limits a launched session and its tools run
// under: the policy's [limits], no flag lowering them.
func sessionLimits(pol *policy.Policy) (sandbox.Limits, error) {
	return (&limitFlags{}).limits(pol.Limits, pol.Settings)
}
