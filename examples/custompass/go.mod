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
	github.com/pkg/errors v0.9.1 // indirect
)

replace github.com/strata-ir/strata => ../..
