//! The stdio hooks' exported names. The hooks are C (`c/stdio.c`: the printf family is
//! variadic, which stable Rust cannot define), and a Rust shared library exports only symbols
//! its Rust code defines: each name here is a naked function that jumps to the C hook
//! `ps_NAME`, leaving every register and the stack as the caller set them — variadic
//! arguments included.

macro_rules! trampolines {
    ($($name:ident => $target:ident;)*) => {
        unsafe extern "C" {
            $(fn $target();)*
        }
        $(
            /// Interposed: jumps to the stdio hook of this name in c/stdio.c.
            ///
            /// # Safety
            /// The C contract of the function of this name.
            #[unsafe(naked)]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name() {
                #[cfg(target_arch = "x86_64")]
                core::arch::naked_asm!("jmp {}", sym $target);
                #[cfg(target_arch = "aarch64")]
                core::arch::naked_asm!("b {}", sym $target);
            }
        )*
    };
}

trampolines! {
    vfprintf => ps_vfprintf;
    vprintf => ps_vprintf;
    fprintf => ps_fprintf;
    printf => ps_printf;
    __vfprintf_chk => ps___vfprintf_chk;
    __vprintf_chk => ps___vprintf_chk;
    __fprintf_chk => ps___fprintf_chk;
    __printf_chk => ps___printf_chk;
    fputs => ps_fputs;
    puts => ps_puts;
    fwrite => ps_fwrite;
    fputc => ps_fputc;
    putc => ps_putc;
    putchar => ps_putchar;
    fflush => ps_fflush;
    // Not stdio, but variadic too (c/mremap.c).
    mremap => ps_mremap;
}
