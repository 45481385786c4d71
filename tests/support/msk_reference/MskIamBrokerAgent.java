// An AWS_MSK_IAM server side for a real Kafka broker, for
// tests/integration/test_msk_iam_broker.py. Amazon MSK's own server side is not
// public; this one checks a client's payload the way the protocol defines it and
// verifies the SigV4 signature with the AWS SDK for Java's signer (the one AWS's
// aws-msk-iam-auth client library uses) -- an implementation independent of the
// botocore signer fastkc uses. Test-only; never packaged with fastkc.
//
// Loaded as a Java agent (the harness takes JVM flags, not classpath entries):
//   -javaagent:msk-iam-broker-agent.jar=<dir of the SDK jars>|<credentials file>
// premain() appends the SDK jars to the system class path (Instrumentation's
// own API for that) and registers a JCA provider for "SaslServerFactory.AWS_MSK_IAM",
// which Kafka's SaslServerAuthenticator finds through Sasl.createSaslServer.
// The credentials file is a Java properties file: accessKey, secretKey,
// sessionToken (optional), region, host -- what the broker accepts.
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.Provider;
import java.security.Security;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.jar.JarFile;

import javax.security.auth.callback.CallbackHandler;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import javax.security.sasl.SaslServerFactory;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.signer.Aws4Signer;
import software.amazon.awssdk.auth.signer.params.Aws4PresignerParams;
import software.amazon.awssdk.http.SdkHttpFullRequest;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.regions.Region;

public final class MskIamBrokerAgent {
    static final String MECHANISM = "AWS_MSK_IAM";
    static volatile Properties accepted;

    public static void premain(String args, Instrumentation inst) throws Exception {
        String[] parts = args.split("\\|", 2);
        File[] jars = new File(parts[0]).listFiles((dir, name) -> name.endsWith(".jar") && !name.startsWith("slf4j"));
        for (File jar : jars) {
            inst.appendToSystemClassLoaderSearch(new JarFile(jar));
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(parts[1])) {
            props.load(in);
        }
        accepted = props;
        Security.addProvider(new MskProvider());
    }

    public static final class MskProvider extends Provider {
        public MskProvider() {
            super("FastkcTestMskIam", "1.0", "AWS_MSK_IAM server side for fastkc's tests");
            put("SaslServerFactory." + MECHANISM, Factory.class.getName());
        }
    }

    public static final class Factory implements SaslServerFactory {
        @Override
        public SaslServer createSaslServer(String mechanism, String protocol, String serverName,
                                           Map<String, ?> props, CallbackHandler cbh) {
            return MECHANISM.equals(mechanism) ? new Server(serverName) : null;
        }

        @Override
        public String[] getMechanismNames(Map<String, ?> props) {
            return new String[] {MECHANISM};
        }
    }

    static final class Server implements SaslServer {
        private static final DateTimeFormatter STAMP =
                DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
        private final String serverName;
        private boolean complete;
        private String authorizationId;

        Server(String serverName) {
            this.serverName = serverName;
        }

        @Override
        public String getMechanismName() {
            return MECHANISM;
        }

        @Override
        public byte[] evaluateResponse(byte[] response) throws SaslException {
            if (complete) {
                throw new SaslException("AWS_MSK_IAM: exchange already complete");
            }
            String reason = verify(response);
            if (reason != null) {
                // the reason goes to the broker's log only, as a broker keeps it from the client
                System.err.println("fastkc-msk-iam: refused: " + reason);
                throw new SaslAuthenticationException("Access denied");
            }
            complete = true;
            System.err.println("fastkc-msk-iam: accepted " + authorizationId);
            String answer = "{\"version\":\"2020_10_22\",\"request-id\":\"" + UUID.randomUUID() + "\"}";
            return answer.getBytes(StandardCharsets.UTF_8);
        }

        private String verify(byte[] response) {
            Map<String, String> p;
            try {
                p = new ObjectMapper().readValue(response, new TypeReference<Map<String, String>>() { });
            } catch (Exception e) {
                return "payload is not a JSON object of strings";
            }
            Properties a = accepted;
            String token = a.getProperty("sessionToken");
            String[][] fixed = {
                // the host the client was told (advertised.listeners); Kafka's serverName
                // here is the reverse lookup of the bound address ("localhost")
                {"version", "2020_10_22"}, {"host", a.getProperty("host", serverName)},
                {"action", "kafka-cluster:Connect"},
                {"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-signedheaders", "host"},
            };
            for (String[] kv : fixed) {
                if (!kv[1].equals(p.get(kv[0]))) {
                    return kv[0] + " is " + p.get(kv[0]) + ", not " + kv[1];
                }
            }
            if (token != null && !token.equals(p.get("x-amz-security-token"))) {
                return "wrong or missing session token";
            }
            Instant signedAt;
            long expires;
            try {
                signedAt = Instant.from(STAMP.parse(p.get("x-amz-date")));
                expires = Long.parseLong(p.get("x-amz-expires"));
            } catch (Exception e) {
                return "x-amz-date or x-amz-expires malformed";
            }
            Instant now = Instant.now();
            if (now.isAfter(signedAt.plusSeconds(expires)) || signedAt.isAfter(now.plus(Duration.ofMinutes(15)))) {
                return "signature expired or dated in the future";
            }
            String credential = a.getProperty("accessKey") + "/" + p.get("x-amz-date").substring(0, 8) + "/"
                    + a.getProperty("region") + "/kafka-cluster/aws4_request";
            if (!credential.equals(p.get("x-amz-credential"))) {
                return "x-amz-credential does not name the accepted key, date and region";
            }
            // The AWS SDK's presigner, at the payload's own time, over the request
            // the payload claims to sign: its signature must be the payload's.
            AwsCredentials creds = token == null
                    ? AwsBasicCredentials.create(a.getProperty("accessKey"), a.getProperty("secretKey"))
                    : AwsSessionCredentials.create(a.getProperty("accessKey"), a.getProperty("secretKey"), token);
            SdkHttpFullRequest request = SdkHttpFullRequest.builder().method(SdkHttpMethod.GET).protocol("https")
                    .host(p.get("host")).appendRawQueryParameter("Action", p.get("action")).build();
            Aws4PresignerParams params = Aws4PresignerParams.builder().awsCredentials(creds)
                    .signingName("kafka-cluster").signingRegion(Region.of(a.getProperty("region")))
                    .signingClockOverride(Clock.fixed(signedAt, ZoneOffset.UTC))
                    .expirationTime(signedAt.plusSeconds(expires)).build();
            String expected = Aws4Signer.create().presign(request, params).rawQueryParameters()
                    .get("X-Amz-Signature").get(0);
            String got = p.getOrDefault("x-amz-signature", "");
            if (!MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII),
                                       got.getBytes(StandardCharsets.US_ASCII))) {
                return "signature does not verify";
            }
            authorizationId = a.getProperty("accessKey");
            return null;
        }

        @Override
        public boolean isComplete() {
            return complete;
        }

        @Override
        public String getAuthorizationID() {
            return authorizationId;
        }

        @Override
        public byte[] unwrap(byte[] incoming, int offset, int len) {
            throw new IllegalStateException("AWS_MSK_IAM has no security layer");
        }

        @Override
        public byte[] wrap(byte[] outgoing, int offset, int len) {
            throw new IllegalStateException("AWS_MSK_IAM has no security layer");
        }

        @Override
        public Object getNegotiatedProperty(String propName) {
            return null;
        }

        @Override
        public void dispose() {
        }
    }
}
