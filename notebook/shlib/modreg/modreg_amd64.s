#include "textflag.h"

// func addModuleDataPC() uintptr
TEXT ·addModuleDataPC(SB),NOSPLIT,$0-8
	LEAQ	runtime·addmoduledata(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func register(md uintptr)
// runtime.addmoduledata follows the platform's ABI (it is called from
// .init_array): the module data goes in DI.
TEXT ·register(SB),NOSPLIT,$0-8
	MOVQ	md+0(FP), DI
	CALL	runtime·addmoduledata(SB)
	RET

// The runtime's module list, for order_go126.go.

// func firstModule() unsafe.Pointer
TEXT ·firstModule(SB),NOSPLIT,$0-8
	LEAQ	runtime·firstmoduledata(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func lastModuleVar() unsafe.Pointer
TEXT ·lastModuleVar(SB),NOSPLIT,$0-8
	LEAQ	runtime·lastmoduledatap(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func modulesSliceVar() unsafe.Pointer
TEXT ·modulesSliceVar(SB),NOSPLIT,$0-8
	LEAQ	runtime·modulesSlice(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
