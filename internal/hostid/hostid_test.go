package hostid

import (
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

func TestContainerID(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 4)
	cases := map[string]string{
		"0::/system.slice/docker-" + id + ".scope\n":                               id,
		"12:memory:/docker/" + id + "\n1:name=systemd:/docker/" + id + "\n":        id,
		"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-" + id + ".scope\n": id,
		"0::/machine.slice/libpod-" + id + ".scope/container\n":                    id,
		"0::/user.slice/user-0.slice/session-3.scope\n":                            "",
		"0::/\n":                       "",
		"0::/docker/" + id[:63] + "\n": "",
	}
	for in, want := range cases {
		if got := ContainerID(in); got != want {
			t.Errorf("ContainerID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStampKeepsWhatIsSet(t *testing.T) {
	p := trace.Process{Host: "node7"}
	Host{Name: "here", BootID: "b", NS: "uts:1"}.Stamp(&p)
	if p.Host != "node7" || p.BootID != "b" || p.HostNS != "uts:1" {
		t.Errorf("stamped: %+v", p)
	}
	if NamespaceName("uts:[4026531838]") != "uts:4026531838" {
		t.Error(NamespaceName("uts:[4026531838]"))
	}
	if h := Self(); h.Name == "" || h.NS == "" {
		t.Errorf("this host: %+v", h)
	}
}
