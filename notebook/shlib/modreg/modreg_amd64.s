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
