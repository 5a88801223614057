/**
 * @peculiar/x509 with what it needs loaded first. Imported only dynamically (x509.ts),
 * so that a bundle keeps it in a chunk of its own that pages load when they first read
 * a certificate.
 */

// @peculiar/x509 finds its algorithms through tsyringe, which needs the Reflect metadata
// API before it loads. The lite build adds only that, and shares one registry with any
// other copy of reflect-metadata an application loads.
import "reflect-metadata/lite";

export { X509Certificate, X509ChainBuilder } from "@peculiar/x509";
