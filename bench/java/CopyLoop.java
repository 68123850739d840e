// Benchmark helper: copy one file over and over with Files.copy and report ops/s.
//
// Usage: java CopyLoop SRC DST ITERATIONS [WARMUP]
//
// This is the JDK side of workload W2. Recent JDKs make Files.copy clone the file
// (ioctl FICLONE) on btrfs and XFS and fall back to an in-kernel copy elsewhere, so it is the
// reference the mimeo library is measured against. bench/run.sh compiles this file with the
// Temurin 25 javac and runs it with the matching java.
//
// WARMUP iterations (default: a tenth of ITERATIONS, at least one) run first and are not
// timed, so that the JIT has compiled the copy path before timing starts. The result is one
// JSON line on stdout, in the same shape as crates/mimeo/examples/copy_loop.rs prints.

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

public final class CopyLoop {
    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length > 4) {
            System.err.println("usage: CopyLoop SRC DST ITERATIONS [WARMUP]");
            System.exit(2);
        }
        Path src = Path.of(args[0]);
        Path dst = Path.of(args[1]);
        long iterations = Math.max(1, Long.parseLong(args[2]));
        long warmup = args.length == 4 ? Long.parseLong(args[3]) : Math.max(1, iterations / 10);

        // Warmup, not timed.
        for (long i = 0; i < warmup; i++) {
            Files.copy(src, dst, StandardCopyOption.REPLACE_EXISTING);
        }

        // Timed loop: the same call, the same destination, replaced every time.
        long start = System.nanoTime();
        for (long i = 0; i < iterations; i++) {
            Files.copy(src, dst, StandardCopyOption.REPLACE_EXISTING);
        }
        double seconds = (System.nanoTime() - start) / 1e9;

        System.out.printf(Locale.ROOT,
                "{\"tool\":\"jdk\",\"iterations\":%d,\"warmup\":%d,\"seconds\":%.6f,"
                        + "\"ops_per_sec\":%.3f,\"java\":\"%s\"}%n",
                iterations, warmup, seconds, iterations / seconds,
                System.getProperty("java.version"));
    }
}
