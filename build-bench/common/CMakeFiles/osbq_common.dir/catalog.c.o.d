common/CMakeFiles/osbq_common.dir/catalog.c.o: \
 /work/main/common/catalog.c /usr/include/stdc-predef.h \
 /work/main/common/catalog.h /usr/include/jansson.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stdarg.h /usr/include/stdio.h \
 /usr/include/x86_64-linux-gnu/bits/libc-header-start.h \
 /usr/include/features.h /usr/include/features-time64.h \
 /usr/include/x86_64-linux-gnu/bits/wordsize.h \
 /usr/include/x86_64-linux-gnu/bits/timesize.h \
 /usr/include/x86_64-linux-gnu/sys/cdefs.h \
 /usr/include/x86_64-linux-gnu/bits/long-double.h \
 /usr/include/x86_64-linux-gnu/gnu/stubs.h \
 /usr/include/x86_64-linux-gnu/gnu/stubs-64.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h \
 /usr/include/x86_64-linux-gnu/bits/types.h \
 /usr/include/x86_64-linux-gnu/bits/typesizes.h \
 /usr/include/x86_64-linux-gnu/bits/time64.h \
 /usr/include/x86_64-linux-gnu/bits/types/__fpos_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/__mbstate_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/__fpos64_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/__FILE.h \
 /usr/include/x86_64-linux-gnu/bits/types/FILE.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_FILE.h \
 /usr/include/x86_64-linux-gnu/bits/stdio_lim.h \
 /usr/include/x86_64-linux-gnu/bits/floatn.h \
 /usr/include/x86_64-linux-gnu/bits/floatn-common.h \
 /usr/include/x86_64-linux-gnu/bits/stdio.h /usr/include/stdlib.h \
 /usr/include/x86_64-linux-gnu/bits/waitflags.h \
 /usr/include/x86_64-linux-gnu/bits/waitstatus.h \
 /usr/include/x86_64-linux-gnu/sys/types.h \
 /usr/include/x86_64-linux-gnu/bits/types/clock_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/clockid_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/time_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/timer_t.h \
 /usr/include/x86_64-linux-gnu/bits/stdint-intn.h /usr/include/endian.h \
 /usr/include/x86_64-linux-gnu/bits/endian.h \
 /usr/include/x86_64-linux-gnu/bits/endianness.h \
 /usr/include/x86_64-linux-gnu/bits/byteswap.h \
 /usr/include/x86_64-linux-gnu/bits/uintn-identity.h \
 /usr/include/x86_64-linux-gnu/sys/select.h \
 /usr/include/x86_64-linux-gnu/bits/select.h \
 /usr/include/x86_64-linux-gnu/bits/types/sigset_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/__sigset_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_timeval.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_timespec.h \
 /usr/include/x86_64-linux-gnu/bits/pthreadtypes.h \
 /usr/include/x86_64-linux-gnu/bits/thread-shared-types.h \
 /usr/include/x86_64-linux-gnu/bits/pthreadtypes-arch.h \
 /usr/include/x86_64-linux-gnu/bits/atomic_wide_counter.h \
 /usr/include/x86_64-linux-gnu/bits/struct_mutex.h \
 /usr/include/x86_64-linux-gnu/bits/struct_rwlock.h /usr/include/alloca.h \
 /usr/include/x86_64-linux-gnu/bits/stdlib-bsearch.h \
 /usr/include/x86_64-linux-gnu/bits/stdlib-float.h \
 /usr/include/jansson_config.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stdbool.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stdint.h /usr/include/stdint.h \
 /usr/include/x86_64-linux-gnu/bits/wchar.h \
 /usr/include/x86_64-linux-gnu/bits/stdint-uintn.h \
 /work/main/common/error.h /usr/include/x86_64-linux-gnu/curl/curl.h \
 /usr/include/x86_64-linux-gnu/curl/curlver.h \
 /usr/include/x86_64-linux-gnu/curl/system.h \
 /usr/include/x86_64-linux-gnu/sys/socket.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_iovec.h \
 /usr/include/x86_64-linux-gnu/bits/socket.h \
 /usr/include/x86_64-linux-gnu/bits/socket_type.h \
 /usr/include/x86_64-linux-gnu/bits/sockaddr.h \
 /usr/include/x86_64-linux-gnu/asm/socket.h \
 /usr/include/asm-generic/socket.h /usr/include/linux/posix_types.h \
 /usr/include/linux/stddef.h \
 /usr/include/x86_64-linux-gnu/asm/posix_types.h \
 /usr/include/x86_64-linux-gnu/asm/posix_types_64.h \
 /usr/include/asm-generic/posix_types.h \
 /usr/include/x86_64-linux-gnu/asm/bitsperlong.h \
 /usr/include/asm-generic/bitsperlong.h \
 /usr/include/x86_64-linux-gnu/asm/sockios.h \
 /usr/include/asm-generic/sockios.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_osockaddr.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/limits.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/syslimits.h \
 /usr/include/limits.h /usr/include/x86_64-linux-gnu/bits/posix1_lim.h \
 /usr/include/x86_64-linux-gnu/bits/local_lim.h \
 /usr/include/linux/limits.h \
 /usr/include/x86_64-linux-gnu/bits/pthread_stack_min-dynamic.h \
 /usr/include/x86_64-linux-gnu/bits/pthread_stack_min.h \
 /usr/include/x86_64-linux-gnu/bits/posix2_lim.h /usr/include/time.h \
 /usr/include/x86_64-linux-gnu/bits/time.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_tm.h \
 /usr/include/x86_64-linux-gnu/bits/types/struct_itimerspec.h \
 /usr/include/x86_64-linux-gnu/bits/types/locale_t.h \
 /usr/include/x86_64-linux-gnu/bits/types/__locale_t.h \
 /usr/include/x86_64-linux-gnu/sys/time.h \
 /usr/include/x86_64-linux-gnu/curl/easy.h \
 /usr/include/x86_64-linux-gnu/curl/multi.h \
 /usr/include/x86_64-linux-gnu/curl/curl.h \
 /usr/include/x86_64-linux-gnu/curl/urlapi.h \
 /usr/include/x86_64-linux-gnu/curl/options.h \
 /usr/include/x86_64-linux-gnu/curl/header.h \
 /usr/include/x86_64-linux-gnu/curl/websockets.h \
 /usr/include/x86_64-linux-gnu/curl/typecheck-gcc.h /usr/include/errno.h \
 /usr/include/x86_64-linux-gnu/bits/errno.h /usr/include/linux/errno.h \
 /usr/include/x86_64-linux-gnu/asm/errno.h \
 /usr/include/asm-generic/errno.h /usr/include/asm-generic/errno-base.h \
 /usr/include/sodium.h /usr/include/sodium/version.h \
 /usr/include/sodium/export.h /usr/include/sodium/core.h \
 /usr/include/sodium/crypto_aead_aes256gcm.h \
 /usr/include/sodium/crypto_aead_chacha20poly1305.h \
 /usr/include/sodium/crypto_aead_xchacha20poly1305.h \
 /usr/include/sodium/crypto_auth.h \
 /usr/include/sodium/crypto_auth_hmacsha512256.h \
 /usr/include/sodium/crypto_auth_hmacsha512.h \
 /usr/include/sodium/crypto_hash_sha512.h \
 /usr/include/sodium/crypto_auth_hmacsha256.h \
 /usr/include/sodium/crypto_hash_sha256.h \
 /usr/include/sodium/crypto_auth_hmacsha512.h \
 /usr/include/sodium/crypto_auth_hmacsha512256.h \
 /usr/include/sodium/crypto_box.h \
 /usr/include/sodium/crypto_box_curve25519xsalsa20poly1305.h \
 /usr/include/sodium/crypto_stream_xsalsa20.h \
 /usr/include/sodium/crypto_box_curve25519xsalsa20poly1305.h \
 /usr/include/sodium/crypto_core_hsalsa20.h \
 /usr/include/sodium/crypto_core_hchacha20.h \
 /usr/include/sodium/crypto_core_salsa20.h \
 /usr/include/sodium/crypto_core_salsa2012.h \
 /usr/include/sodium/crypto_core_salsa208.h \
 /usr/include/sodium/crypto_generichash.h \
 /usr/include/sodium/crypto_generichash_blake2b.h \
 /usr/include/sodium/crypto_generichash_blake2b.h \
 /usr/include/sodium/crypto_hash.h \
 /usr/include/sodium/crypto_hash_sha256.h \
 /usr/include/sodium/crypto_hash_sha512.h \
 /usr/include/sodium/crypto_kdf.h \
 /usr/include/sodium/crypto_kdf_blake2b.h \
 /usr/include/sodium/crypto_kdf_blake2b.h /usr/include/sodium/crypto_kx.h \
 /usr/include/sodium/crypto_onetimeauth.h \
 /usr/include/sodium/crypto_onetimeauth_poly1305.h \
 /usr/include/sodium/crypto_onetimeauth_poly1305.h \
 /usr/include/sodium/crypto_pwhash.h \
 /usr/include/sodium/crypto_pwhash_argon2i.h \
 /usr/include/sodium/crypto_pwhash_argon2id.h \
 /usr/include/sodium/crypto_pwhash_argon2i.h \
 /usr/include/sodium/crypto_scalarmult.h \
 /usr/include/sodium/crypto_scalarmult_curve25519.h \
 /usr/include/sodium/crypto_scalarmult_curve25519.h \
 /usr/include/sodium/crypto_secretbox.h \
 /usr/include/sodium/crypto_secretbox_xsalsa20poly1305.h \
 /usr/include/sodium/crypto_secretbox_xsalsa20poly1305.h \
 /usr/include/sodium/crypto_secretstream_xchacha20poly1305.h \
 /usr/include/sodium/crypto_aead_xchacha20poly1305.h \
 /usr/include/sodium/crypto_stream_chacha20.h \
 /usr/include/sodium/crypto_shorthash.h \
 /usr/include/sodium/crypto_shorthash_siphash24.h \
 /usr/include/sodium/crypto_shorthash_siphash24.h \
 /usr/include/sodium/crypto_sign.h \
 /usr/include/sodium/crypto_sign_ed25519.h \
 /usr/include/sodium/crypto_sign_ed25519.h \
 /usr/include/sodium/crypto_stream.h \
 /usr/include/sodium/crypto_stream_chacha20.h \
 /usr/include/sodium/crypto_stream_salsa20.h \
 /usr/include/sodium/crypto_stream_xsalsa20.h \
 /usr/include/sodium/crypto_verify_16.h \
 /usr/include/sodium/crypto_verify_32.h \
 /usr/include/sodium/crypto_verify_64.h /usr/include/sodium/randombytes.h \
 /usr/include/sodium/randombytes_internal_random.h \
 /usr/include/sodium/randombytes.h \
 /usr/include/sodium/randombytes_sysrandom.h \
 /usr/include/sodium/runtime.h /usr/include/sodium/utils.h \
 /usr/include/sodium/crypto_box_curve25519xchacha20poly1305.h \
 /usr/include/sodium/crypto_stream_xchacha20.h \
 /usr/include/sodium/crypto_core_ed25519.h \
 /usr/include/sodium/crypto_core_ristretto255.h \
 /usr/include/sodium/crypto_scalarmult_ed25519.h \
 /usr/include/sodium/crypto_scalarmult_ristretto255.h \
 /usr/include/sodium/crypto_secretbox_xchacha20poly1305.h \
 /usr/include/sodium/crypto_pwhash_scryptsalsa208sha256.h \
 /usr/include/sodium/crypto_stream_salsa2012.h \
 /usr/include/sodium/crypto_stream_salsa208.h \
 /usr/include/sodium/crypto_stream_xchacha20.h /usr/include/string.h \
 /usr/include/strings.h /work/main/common/semver.h
