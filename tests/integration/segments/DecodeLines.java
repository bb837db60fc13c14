import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * For each hex line on stdin, prints the UTF-16 code units of new String(bytes, UTF_8) as
 * space-separated hex: the oracle for how Java's tools turn arbitrary bytes into text.
 */
public final class DecodeLines {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String text = new String(HexFormat.of().parseHex(line), StandardCharsets.UTF_8);
            for (int i = 0; i < text.length(); i++) {
                if (i > 0) {
                    out.append(' ');
                }
                out.append(Integer.toHexString(text.charAt(i)));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
