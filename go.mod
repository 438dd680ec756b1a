module github.com/strata-ir/strata

go 1.26

require pgregory.net/rapid v1.3.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/ebitengine/purego v0.11.3
	github.com/kr/pretty v0.2.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/llir/ll v0.0.0-20220802044011-65001c0fb73c // indirect
	github.com/llir/llvm v0.3.6 // indirect
	github.com/mewmew/float v0.0.0-20201204173432-505706aa38fa // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/mod v0.4.2 // indirect
	golang.org/x/sys v0.0.0-20210510120138-977fb7262007 // indirect
	golang.org/x/tools v0.1.4 // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
)
