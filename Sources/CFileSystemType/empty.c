// The header is all there is: one inline function (statfs f_type).
