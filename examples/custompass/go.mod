module example.com/custompass

go 1.26

require (
	github.com/strata-ir/strata v0.0.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/llir/llvm v0.3.6 // indirect
	github.com/mewmew/float v0.0.0-20201204173432-505706aa38fa // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/schollz/progressbar/v3 v3.19.1 // indirect
	golang.org/x/mod v0.27.0 // indirect
	golang.org/x/sync v0.16.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/term v0.44.0 // indirect
	golang.org/x/tools v0.36.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/strata-ir/strata => ../..
