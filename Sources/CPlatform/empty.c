// The header is all there is: one inline function (pthread_setname_np).
