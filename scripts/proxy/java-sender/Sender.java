// A backend's FCM send using only Java's standard library, the way the Java Admin SDK does it: google-auth's
// service-account flow (an RS256 assertion for the account's token_uri, exchanged for an access token) and then the
// send, both over HttpsURLConnection (what the Admin SDK's NetHttpTransport uses). It posts to oauth2.googleapis.com
// and fcm.googleapis.com and knows nothing of the relay. Run with -Dhttps.proxyHost/-Dhttps.proxyPort set to the
// relay's proxy and -Djavax.net.ssl.trustStore to a store holding the relay's CA (what the JDK reads), it reaches the
// relay unchanged.
//
//	java -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=P -Djavax.net.ssl.trustStore=relay.p12 \
//	    -Djavax.net.ssl.trustStorePassword=changeit Sender.java SERVICE_ACCOUNT.json TOKEN
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.HttpsURLConnection;

public class Sender {
    /** A string member of a flat JSON object (the service account's and the token answer's are). */
    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*\"").matcher(json);
        if (!m.find()) throw new IllegalArgumentException("no \"" + name + "\" in " + json);
        StringBuilder value = new StringBuilder();
        for (int i = m.end(); json.charAt(i) != '"'; i++) {
            char c = json.charAt(i);
            if (c == '\\') {
                char escaped = json.charAt(++i);
                value.append(escaped == 'n' ? '\n' : escaped);
            } else {
                value.append(c);
            }
        }
        return value.toString();
    }

    static String base64url(byte[] bytes) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    static String[] post(String url, String contentType, String authorization, String body) throws IOException {
        HttpsURLConnection connection = (HttpsURLConnection) new URL(url).openConnection();
        connection.setRequestMethod("POST");
        connection.setDoOutput(true);
        connection.setRequestProperty("Content-Type", contentType);
        if (authorization != null) connection.setRequestProperty("Authorization", authorization);
        try (OutputStream out = connection.getOutputStream()) {
            out.write(body.getBytes(StandardCharsets.UTF_8));
        }
        int status = connection.getResponseCode();
        InputStream in = status < 400 ? connection.getInputStream() : connection.getErrorStream();
        ByteArrayOutputStream answer = new ByteArrayOutputStream();
        if (in != null) in.transferTo(answer);
        return new String[] {String.valueOf(status), answer.toString(StandardCharsets.UTF_8).trim()};
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java Sender.java SERVICE_ACCOUNT.json TOKEN");
            System.exit(64);
        }
        String account = Files.readString(Path.of(args[0]));
        String tokenURI = field(account, "token_uri"), email = field(account, "client_email"), project = field(account, "project_id");
        String pem = field(account, "private_key").replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(pem)));

        long now = System.currentTimeMillis() / 1000;
        String header = base64url(("{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" + field(account, "private_key_id") + "\"}")
                .getBytes(StandardCharsets.UTF_8));
        String claims = base64url(("{\"iss\":\"" + email + "\",\"scope\":\"https://www.googleapis.com/auth/firebase.messaging\","
                + "\"aud\":\"" + tokenURI + "\",\"iat\":" + now + ",\"exp\":" + (now + 3600) + "}").getBytes(StandardCharsets.UTF_8));
        Signature signer = Signature.getInstance("SHA256withRSA");
        signer.initSign(key);
        signer.update((header + "." + claims).getBytes(StandardCharsets.UTF_8));
        String assertion = header + "." + claims + "." + base64url(signer.sign());

        String[] token = post(tokenURI, "application/x-www-form-urlencoded", null,
                "grant_type=" + URLEncoder.encode("urn:ietf:params:oauth:grant-type:jwt-bearer", StandardCharsets.UTF_8)
                        + "&assertion=" + assertion);
        System.out.println("token " + token[0] + (token[0].equals("200") ? "" : " " + token[1]));
        if (!token[0].equals("200")) System.exit(1);
        String bearer = "Bearer " + field(token[1], "access_token");

        String message = "{\"message\":{\"token\":\"" + args[1] + "\",\"data\":{\"sender\":\"java\"}}}";
        String[] sent = post("https://fcm.googleapis.com/v1/projects/" + project + "/messages:send", "application/json", bearer, message);
        System.out.println("send " + sent[0] + " " + sent[1]);
        if (!sent[0].equals("200")) System.exit(1);
    }
}
