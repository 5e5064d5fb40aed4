// Package hostid says which host this process runs on, as a trace's
// process records keep it (trace.Process: Host, BootID, MachineID, HostNS,
// Container), for the recorder to stamp on the processes it recorded.
package hostid

import (
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/cuprof/cuprof/trace"
)

// Host is what this process knows of its host.
type Host struct {
	Name, BootID, MachineID, NS, Container string
}

// Self returns this process's host, read once.
var Self = sync.OnceValue(func() Host {
	h := Host{}
	h.Name, _ = os.Hostname()
	h.BootID = readTrim("/proc/sys/kernel/random/boot_id")
	h.MachineID = readTrim("/etc/machine-id")
	var ns []string
	for _, n := range []string{"uts", "pid", "net"} {
		if l, err := os.Readlink("/proc/self/ns/" + n); err == nil {
			ns = append(ns, NamespaceName(l))
		}
	}
	h.NS = strings.Join(ns, " ")
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		h.Container = ContainerID(string(b))
	}
	return h
})

// Stamp sets p's host fields to h's where p has none.
func (h Host) Stamp(p *trace.Process) {
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&p.Host, h.Name)
	fill(&p.BootID, h.BootID)
	fill(&p.MachineID, h.MachineID)
	fill(&p.HostNS, h.NS)
	fill(&p.Container, h.Container)
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// NamespaceName turns a namespace link ("uts:[4026531838]") into
// "uts:4026531838".
func NamespaceName(link string) string {
	return strings.NewReplacer("[", "", "]", "").Replace(link)
}

// containerRe matches a container id in a cgroup path: 64 hex digits, as
// Docker, containerd, CRI-O and Podman name their cgroups
// ("/docker/ID", "docker-ID.scope", "cri-containerd-ID.scope",
// "crio-ID.scope", "libpod-ID.scope").
var containerRe = regexp.MustCompile(`(?:^|[/\-:])([0-9a-f]{64})(?:\.scope)?(?:/|$)`)

// ContainerID returns the container id named by the last line of a
// /proc/PID/cgroup that names one, "" when none does.
func ContainerID(cgroup string) string {
	id := ""
	for _, line := range strings.Split(cgroup, "\n") {
		// "hierarchy-ID:controllers:path"
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if m := containerRe.FindAllStringSubmatch(parts[2], -1); m != nil {
			id = m[len(m)-1][1]
		}
	}
	return id
}
