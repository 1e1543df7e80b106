// Generated from schemas/*.schema.json by `npm run generate`. Do not edit: change the schema and regenerate.

/**
 * RFC 1123 DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63
 * characters.
 */
export type DnsLabel = string;

/** RFC 1123 DNS subdomain: dot-separated DNS labels, at most 253 characters. */
export type DnsSubdomain = string;

/** Kubernetes-style metadata of a namespaced manifest. The namespace is the OpenStack project. */
export type NamespacedMetadata = {
  /**
   * Name of the manifest, unique per kind in its namespace. Other manifests refer to it by this name; it is also the
   * default OpenStack name.
   */
  name: DnsSubdomain;
  /** Kubernetes namespace, which is the OpenStack project the object lives in. */
  namespace: DnsLabel;
  /** Kubernetes labels (string map). */
  labels?: Record<string, string>;
  /** Kubernetes annotations (string map). */
  annotations?: Record<string, string>;
};

/** Kubernetes-style metadata of a cluster-scoped manifest (no namespace). */
export type ClusterMetadata = {
  /** Name of the manifest, unique per kind in the cluster. */
  name: DnsSubdomain;
  /** Kubernetes labels (string map). */
  labels?: Record<string, string>;
  /** Kubernetes annotations (string map). */
  annotations?: Record<string, string>;
};

/** Reference to another manifest by name, in the same namespace. */
export type LocalRef = {
  /** metadata.name of the referenced manifest. */
  name: DnsSubdomain;
};

/**
 * Reference to a Kubernetes Secret (not a KupenStack manifest). For namespaced kinds the Secret is in the manifest's
 * namespace; for cluster-scoped kinds it is in the agent's namespace.
 */
export type SecretRef = {
  /** Name of the Secret. */
  name: DnsSubdomain;
};

/**
 * Reference to one key of a Kubernetes Secret (not a KupenStack manifest). For namespaced kinds the Secret is in the
 * manifest's namespace; for cluster-scoped kinds it is in the agent's namespace.
 */
export type SecretKeyRef = {
  /** Name of the Secret. */
  name: DnsSubdomain;
  /** Key inside the Secret. The default depends on the field. */
  key?: string;
};

/** Name of an OpenStack object: 1 to 255 characters, no leading or trailing whitespace, no control characters. */
export type OpenstackName = string;

/** ID of the object in OpenStack (usually a UUID; a name for key pairs, a flavor ID for flavors). */
export type OpenstackID = string;

/** An IPv4 or IPv6 address. */
export type IpAddress = string;

/** An IPv4 or IPv6 network in CIDR notation, e.g. 10.0.0.0/24 or 2001:db8::/64. */
export type Cidr = string;

/** A MAC address, six colon-separated hex octets, e.g. fa:16:3e:12:34:56. */
export type MacAddress = string;

/**
 * Tags: at most 32, each 1 to 255 characters without commas, no duplicates (a set: order does not matter). The agent
 * adds its own ownership tags on top of these.
 */
export type Tags = string[];

/**
 * Kind-agnostic filter selecting one pre-existing OpenStack object; all given criteria must match. Matching zero
 * objects waits; matching more than one is an error.
 */
export type ImportFilter = {
  /** Exact name of the object. */
  name?: OpenstackName;
  /** Exact description of the object. */
  description?: string;
  /** The object must carry all of these tags. */
  tags?: Tags;
};

/** Selects one pre-existing OpenStack object: exactly one of `id` or `filter`. */
export type ImportSpec = {
  /** ID of the object. */
  id?: OpenstackID;
  /** Criteria that must match exactly one object. */
  filter?: ImportFilter;
  /**
   * Take the object over (with managementPolicy managed): the first apply writes only the ownership marker on it, its
   * id unchanged; from then on it is managed like an object KupenStack created (updates, and deletion on prune only
   * with onDelete: delete; an adopted object is detached by default). Without adopt, a managed import is observe-only.
   */
  adopt?: boolean;
};

/**
 * managed: the agent creates, updates and deletes the object. unmanaged: the agent only imports and observes it
 * (requires `import`) and never changes or deletes it.
 */
export type ManagementPolicy = "managed" | "unmanaged";

/**
 * What happens in OpenStack when the manifest is removed from Git (prune) or deleted: delete the OpenStack object, or
 * detach (forget it and leave it in place).
 */
export type OnDelete = "delete" | "detach";

/** A Go-style duration: a sequence of numbers with units ms, s, m or h, e.g. 500ms, 30s, 5m, 1h30m. */
export type Duration = string;

/**
 * A cron schedule: five space-separated fields (minute hour day-of-month month day-of-week), or one of @yearly,
 * @annually, @monthly, @weekly, @daily, @midnight, @hourly. Times are UTC.
 */
export type Cron = string;

/** A Kubernetes-style condition. */
export type Condition = {
  /** Condition type: Ready, Reconciling or Stalled (kinds may add their own). */
  type: string;
  /** Status of the condition. */
  status: "True" | "False" | "Unknown";
  /**
   * CamelCase machine-readable reason. Terminal reasons (bad spec) wait for a new revision; transient ones are retried
   * with backoff.
   */
  reason: string;
  /** Human-readable details. */
  message?: string;
  /** When the status last changed. */
  lastTransitionTime: string;
  /** metadata.generation the condition was computed for. */
  observedGeneration?: number;
};

/** Conditions: Ready, Reconciling and Stalled. */
export type Conditions = Condition[];

/** What OpenStack last reported for the object (free-form, per kind). */
export type Observed = Record<string, unknown>;

/** Status fields shared by every kind. */
export type CommonStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
};

/**
 * The trusted public key, PEM (cosign.pub as `cosign generate-key-pair` writes it; ECDSA, RSA or ed25519). Exactly one
 * of secretRef, env or file.
 */
export type CosignPublicKey = {
  /**
   * Secret whose `cosign.pub` key holds the PEM public key (what `cosign generate-key-pair k8s://<namespace>/<name>`
   * makes).
   */
  secretRef?: SecretRef;
  /** Standalone only: environment variable holding the PEM public key. */
  env?: string;
  /** Standalone only: file holding the PEM public key. */
  file?: string;
};

/**
 * Keyless (certificate) signatures: the signing certificate must chain to a certificate authority of the trusted root,
 * and name the identity (subject alternative name: an e-mail or URI) and the OIDC issuer (Fulcio's issuer extension)
 * given here. Exactly one of identity or identityRegExp, and of issuer or issuerRegExp.
 */
export type CosignKeyless = {
  /**
   * Sigstore's trusted_root.json (the format of `cosign trusted-root create` and of the TUF repository's target): the
   * certificate authorities, and the transparency logs, CT logs and timestamp authorities the checks below need.
   * Exactly one of secretRef, env or file.
   */
  trustedRoot: {
    /** Secret whose `trusted_root.json` key holds it. */
    secretRef?: SecretRef;
    /** Standalone only: environment variable holding it. */
    env?: string;
    /** Standalone only: file holding it. */
    file?: string;
  };
  /**
   * The exact signer identity, e.g. ci@example.com or
   * https://github.com/org/repo/.github/workflows/release.yml@refs/heads/main.
   */
  identity?: string;
  /**
   * A regular expression (JavaScript syntax) the whole signer identity must match, e.g. ^https://github\\.com/org/.*$.
   */
  identityRegExp?: string;
  /** The exact OIDC issuer, e.g. https://token.actions.githubusercontent.com. */
  issuer?: string;
  /** A regular expression (JavaScript syntax) the whole OIDC issuer must match. */
  issuerRegExp?: string;
  /**
   * true (default): the signature needs an entry in a transparency log of the trusted root and the certificate a signed
   * certificate timestamp of one of its CT logs, and the certificate must have been valid when the log saw the
   * signature (a sigstore bundle, cosign v3). false, for private CAs and air-gapped signers (cosign sign
   * --tlog-upload=false): neither is asked for, and the certificate must be valid now; like cosign verify
   * --insecure-ignore-tlog --insecure-ignore-sct.
   */
  transparencyLog?: boolean;
};

/**
 * Signature policy of an OCI image: only a manifest signed with cosign by the trusted public key (`publicKey`), or by a
 * certificate of a trusted root that names the expected identity and issuer (`keyless`), is imported (the classic
 * `sha256-<hex>.sig` tag, or a sigstore bundle found through the OCI 1.1 referrers API). The signature must cover the
 * digest being imported (the image manifest's, or the index's it was picked from). Unsigned, otherwise signed or copied
 * signatures are refused before anything is made in Glance. Exactly one of publicKey or keyless. With `attestations`,
 * the digest must also carry each listed in-toto attestation (`cosign attest`), signed and meeting its conditions.
 */
export type ImageVerify = {
  /** Signature format. cosign: cosign signatures (v2 classic and v3 bundles), key-based or keyless. */
  provider?: "cosign";
  publicKey?: CosignPublicKey;
  keyless?: CosignKeyless;
  /**
   * Attestations the digest must carry besides its signature (Kyverno's verifyImages attestations, for VM images): each
   * an in-toto statement made by `cosign attest`, in a sigstore bundle found through the OCI 1.1 referrers API or in
   * the classic `sha256-<hex>.att` tag, whose signature verifies with the attestation's signer (default: this policy's
   * publicKey or keyless), whose subject is the digest being imported, and whose predicate meets the conditions. A
   * digest missing one, or whose attestation fails, is not imported: the Image is Stalled
   * (AttestationVerificationFailed) naming the predicate type and why.
   */
  attestations?: ImageAttestation[];
};

/**
 * One required attestation: its predicate type, who must have signed it, and conditions on its predicate. At most one
 * of publicKey or keyless (none: the image signature's signer).
 */
export type ImageAttestation = {
  /**
   * The statement's predicateType URI (e.g. https://slsa.dev/provenance/v1), or one of cosign's --type names:
   * slsaprovenance (SLSA provenance v0.2 or v1), slsaprovenance02, slsaprovenance1, spdx, spdxjson, cyclonedx, vuln
   * (https://cosign.sigstore.dev/attestation/vuln/v1).
   */
  predicateType: string;
  publicKey?: CosignPublicKey;
  keyless?: CosignKeyless;
  /**
   * Conditions on the predicate. builderId/builderIdRegExp: SLSA provenance only; maxSeverity and maxAgeDays: vuln only
   * (the newest verified scan is judged).
   */
  conditions?: {
    /** SLSA provenance: the exact builder id (v1 runDetails.builder.id, v0.2 builder.id). */
    builderId?: string;
    /** SLSA provenance: a regular expression (JavaScript syntax) the whole builder id must match. */
    builderIdRegExp?: string;
    /**
     * vuln: refused when the scan has a finding at or above this severity (LOW < MEDIUM < HIGH < CRITICAL); CRITICAL:
     * no critical finding.
     */
    maxSeverity?: "LOW" | "MEDIUM" | "HIGH" | "CRITICAL";
    /** vuln: refused when the scan finished (metadata.scanFinishedOn) more than this many days ago. */
    maxAgeDays?: number;
  };
};

/**
 * Desired application credential. KupenStack makes a Keystone service user for it in the project's domain, gives that
 * user the roles named on the namespace's project, and has the user make the credential (Keystone lets only the user
 * itself do that). The user's random password is used once and never stored. Any change of roles, accessRules,
 * unrestricted, expiresAt, rotateAfter, secretRef or the rotate annotation makes a new credential; the old one keeps
 * working for gracePeriod.
 */
export type ApplicationCredentialSpec = {
  /**
   * When the manifest is removed from Git: delete (default) the credential, its service user and the Secret if
   * KupenStack made it, or detach and leave them in place.
   */
  onDelete?: OnDelete;
  /**
   * Keystone role names the credential carries on the namespace's project (member, reader, load-balancer_member…).
   * Names, not ids. A role the cloud does not have stops the credential with a message naming it.
   */
  roles: string[];
  /**
   * Secret in the manifest's namespace that receives the credential: keys clouds.yaml (a ready cloud named openstack,
   * auth_type v3applicationcredential), application_credential_id, application_credential_secret, auth_url and
   * region_name. Made by KupenStack when missing (and then deleted with the manifest, or once a changed secretRef's new
   * Secret holds the credential); an existing Secret keeps its other keys. Standalone: the folder
   * <secretsDir>/<namespace>/<name>/, files mode 0600, swapped atomically like a mounted Secret volume.
   */
  secretRef: SecretRef;
  /**
   * When Keystone stops accepting the credential (passed to Keystone as expires_at; every rotated credential carries it
   * too). Past it, nothing more can be made: set a later time or remove the field.
   */
  expiresAt?: string;
  /**
   * Makes a new credential this long after the current one was made (e.g. 720h). Each credential also expires in
   * Keystone at rotateAfter + gracePeriod after it was made (or at expiresAt if sooner), so one the agent could not
   * rotate still runs out. Absent: rotated only on a change or the rotate annotation.
   */
  rotateAfter?: Duration;
  /**
   * How long an old credential keeps working after a rotation, so clients reading the Secret pick up the new one
   * (default 10m). It is deleted by the first run after that.
   */
  gracePeriod?: Duration;
  /**
   * Limits the credential to these API calls (Keystone access rules): a request to any other service, method or path is
   * refused by the service's keystonemiddleware, e.g. a cloud controller manager that needs only Neutron and Octavia.
   * Absent: every API the roles allow. A change makes a new credential (a rotation). Each service must set service_type
   * in its [keystone_authtoken] section to accept such a credential at all.
   */
  accessRules?: ({
    /** The catalog's service type: network, load-balancer, compute, volumev3, image, identity… */
    service: string;
    /** The HTTP method. */
    method: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
    /**
     * The request path as the service sees it, starting with /; * is one segment, ** any number (e.g. /v2.0/ports/**).
     */
    path: string;
  })[];
  /**
   * Lets the holder make more application credentials and trusts with it (Keystone's unrestricted). Default false. In a
   * tenant namespace refused by the member policy: whoever holds it could mint credentials that outlive every rotation;
   * allowed in admin namespaces. A change makes a new credential.
   */
  unrestricted?: boolean;
};

/** Observed state, written by the agent. */
export type ApplicationCredentialStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** Keystone ID of the current application credential. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Keystone ID of the service user that owns the current credential. */
  userId?: string;
  /** Secret that holds the current credential (never the secret itself). */
  secretName?: string;
  /** When Keystone stops accepting the current credential; absent when it does not expire. */
  expiresAt?: string;
  /** When the current credential was made. */
  rotatedAt?: string;
  /** Older credentials still working during their grace period. */
  retiring?: number;
};

/**
 * A Keystone application credential for an application running in the cloud (a Kubernetes cloud provider, a backup
 * tool): scoped to the namespace's project with the roles named, delivered into a Secret, rotated with a grace period.
 * Its secret never reaches status, logs, Events or plans.
 */
export interface ApplicationCredential {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'ApplicationCredential';
  metadata: NamespacedMetadata;
  spec: ApplicationCredentialSpec;
  status?: ApplicationCredentialStatus;
}

/**
 * Desired Nova flavor. Nova flavors cannot change: any change to vcpus, ram, disk, swap, ephemeral, rxtxFactor or
 * isPublic replaces the flavor (running VMs keep the old one until resized). vcpus, ram and disk are required unless
 * `import` is set.
 */
export type FlavorSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Nova flavor instead of creating one: by `id`, or by a `filter` that must match exactly one object
   * in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted and the
   * declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /**
   * Name of the OpenStack flavor. Default: metadata.name. Nova flavor names are unique in the whole cloud, so the agent
   * prefixes the project unless the namespace is an admin namespace.
   */
  name?: OpenstackName;
  /**
   * Flavor description (Nova microversion 2.55+). The agent appends its ownership marker, since flavors have no tags.
   */
  description?: string;
  /** Number of virtual CPUs. */
  vcpus?: number;
  /** Memory in MiB. */
  ram?: number;
  /** Root disk in GiB. 0 means the root disk is sized from the image (boot-from-volume flavors). */
  disk?: number;
  /** Swap disk in MiB. 0 means none. */
  swap?: number;
  /** Ephemeral (scratch) disk in GiB. 0 means none. */
  ephemeral?: number;
  /** Legacy rxtx_factor (bandwidth weight; ignored by Neutron). */
  rxtxFactor?: number;
  /**
   * Flavor extra specs, e.g. hw:cpu_policy: dedicated, hw:mem_page_size: large, quota:disk_read_bytes_sec. Updated in
   * place.
   */
  extraSpecs?: Record<string, string>;
  /**
   * Visible to every project. Allowed only in admin namespaces. Default: false (the agent sends it; Nova's own default
   * is true): private, with access for this namespace's project only.
   */
  isPublic?: boolean;
};

/** Observed state, written by the agent. */
export type FlavorStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
};

/** A Nova flavor, private to the namespace's project unless the namespace is an admin namespace. */
export interface Flavor {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Flavor';
  metadata: NamespacedMetadata;
  spec: FlavorSpec;
  status?: FlavorStatus;
}

/** Desired Neutron floating IP. At most one of portRef and vmRef; with neither the address is only reserved. */
export type FloatingIPSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Neutron floating IP instead of creating one: by `id`, or by a `filter` that must match exactly
   * one object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is
   * adopted and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Human-readable description of the floating IP (OpenStack `description`, at most 255 characters). */
  description?: string;
  /**
   * External network the address comes from; cannot change. Exactly one of networkRef (a Network manifest) or network
   * (a pre-existing network).
   */
  externalNetwork: {
    /** External Network manifest (admin namespaces define these). */
    networkRef?: LocalRef;
    /**
     * Pre-existing external network, by id or by filter (e.g. {filter: {name: public}}). Exactly one of id and filter.
     */
    network?: {
      /** Network ID. */
      id?: OpenstackID;
      /** Criteria that must match exactly one network. */
      filter?: {
        /** Exact network name. */
        name?: OpenstackName;
        /** The network must carry all of these tags. */
        tags?: Tags;
      };
    };
  };
  /** Associate with this Port manifest. */
  portRef?: LocalRef;
  /**
   * Associate with this VirtualMachine manifest: with its port on the network routed to the external network (see
   * fixedIPAddress).
   */
  vmRef?: LocalRef;
  /** Fixed address of the port to associate with, when the port has several. */
  fixedIPAddress?: IpAddress;
  /**
   * Pin a specific floating address (must be free in the external network; usually needs admin rights). Cannot change.
   */
  floatingIPAddress?: IpAddress;
  /** Tags set on the Neutron floating IP, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type FloatingIPStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** The floating address. */
  floatingIPAddress?: string;
  /** Fixed address it is associated with. */
  fixedIPAddress?: string;
  /** Neutron port ID it is associated with. */
  portID?: string;
};

/** A Neutron floating IP, optionally associated with a port or VM. */
export interface FloatingIP {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'FloatingIP';
  metadata: NamespacedMetadata;
  spec: FloatingIPSpec;
  status?: FloatingIPStatus;
}

/** Desired Glance image. Exactly one of `source` (create and upload) or `import` (adopt an existing image). */
export type ImageSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Glance image instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /**
   * Name of the OpenStack image. Default: metadata.name. With a moving tag every version gets a new image of this name;
   * older ones are hidden.
   */
  name?: OpenstackName;
  /** Where the image data comes from. Exactly one of url or oci. */
  source?: {
    /** Download the disk over HTTP(S). */
    url?: {
      /** HTTP(S) URL of the disk file. */
      url: string;
      /** Expected sha256 of the downloaded bytes (lower-case hex). Verified while streaming. */
      sha256?: string;
    };
    /**
     * Pull the disk from an OCI registry (a KupenStack disk artifact, any application/vnd.diskimage.* artifact, a plain
     * `oras push` of a disk file, a KubeVirt containerDisk, or one disk of a KubeVirt VM export). Exactly one of tag,
     * semver or digest.
     */
    oci?: {
      /**
       * Repository without scheme or tag, e.g. 127.0.0.1:5050/vm/cirros or registry.example.com/images/ubuntu. The
       * first component is always the registry host (no implicit Docker Hub).
       */
      repository: string;
      /** Tag to follow, e.g. 0.6. When the tag moves to a new digest, a new Glance image is made (see keep). */
      tag?: string;
      /** Semantic-version range; the highest matching tag is used, e.g. '>=0.6.0 <0.7.0', '0.6.x' or '~1.2'. */
      semver?: string;
      /** Pinned manifest digest, e.g. sha256:<64 hex>. Never moves. */
      digest?: string;
      /**
       * Platform to pick from a multi-arch index. Default: the first manifest, or linux/amd64 when the index lists
       * platforms.
       */
      platform?: {
        /** OCI/Go architecture name, e.g. amd64, arm64, ppc64le, s390x, riscv64. */
        architecture: string;
        /** Operating system, e.g. linux or windows. Default: linux. */
        os?: string;
        /** Architecture variant, e.g. v8 for arm64. */
        variant?: string;
      };
      /**
       * The disk to import from a KubeVirt VM export (artifactType application/vnd.kubevirt.virtualmachine.v1) that has
       * several: its volume name, the layer's io.kubevirt.disk.name, e.g. rootdisk. A multi-disk export without it is
       * refused with the list of names; any other artifact refuses it (it has one disk).
       */
      disk?: string;
      /** Talk plain HTTP to the registry (test registries only). */
      insecure?: boolean;
      /**
       * shared (the default when the manifest sets none of name, tags, properties, visibility, protected, minDisk,
       * minRam, allowedProperties): one Glance image per digest for the whole cloud, owned by the agent's images
       * project, shared with each project that declares it (Glance image members, accepted on the project's behalf);
       * the second project's import moves no bytes, and the image is deleted when the last project's manifest goes (and
       * keep allows). It carries its artifact's name (`<repository basename>@sha256:<12 hex>`) and properties, so those
       * fields cannot be set with it. private (the default when one of those fields is set): a Glance image per
       * project, named, tagged and shaped by this manifest; `visibility: public` images (admin namespaces) are private
       * copies made public. Switching between the two replaces the image.
       */
      sharing?: "private" | "shared";
      /** Secret of type kubernetes.io/dockerconfigjson holding the registry credentials. Default: anonymous. */
      credentialsSecretRef?: SecretRef;
    };
  };
  /**
   * Import only versions signed with cosign by this public key (source.oci only). Default: the Sync's imageVerify, else
   * none.
   */
  verify?: ImageVerify;
  /**
   * Glance disk_format. Default: detected from the OCI artifact (media type or annotations) and confirmed by sniffing
   * the first bytes of the disk.
   */
  diskFormat?: "ami" | "ari" | "aki" | "vhd" | "vhdx" | "vmdk" | "raw" | "qcow2" | "vdi" | "iso" | "ploop";
  /** Glance container_format. qcow2 and raw disks have none: bare. */
  containerFormat?: "ami" | "ari" | "aki" | "bare" | "ovf" | "ova" | "docker" | "compressed";
  /**
   * Glance visibility. Default at creation: private (the agent sends it; Glance's own default is shared). public is
   * allowed only in admin namespaces (Sync spec.adminNamespaces).
   */
  visibility?: "public" | "community" | "shared" | "private";
  /**
   * Protect the image from deletion in Glance. Default at creation: false. The agent lifts protection before it deletes
   * an image it owns.
   */
  protected?: boolean;
  /** Minimum root disk size to boot the image, in GiB (Glance min_disk). */
  minDisk?: number;
  /** Minimum RAM to boot the image, in MiB (Glance min_ram). */
  minRam?: number;
  /**
   * Extra Glance image properties, e.g. os_distro, os_version, architecture, hw_disk_bus, hw_qemu_guest_agent. Values
   * are strings; these win over properties taken from OCI annotations.
   */
  properties?: Record<string, string>;
  /**
   * Glance property names (glob patterns such as hw_* or os_*) that may be copied from the OCI artifact's
   * io.kupenstack.vmimage.property.<key> annotations. Default: none.
   */
  allowedProperties?: string[];
  /** How many Glance images (versions) to retain when an OCI tag moves; older ones are deleted once no VM uses them. */
  keep?: number;
  /**
   * How often to re-resolve an OCI tag or semver range. At most one of interval and schedule; with neither, the tag is
   * re-resolved on every Sync run.
   */
  interval?: Duration;
  /** Cron schedule for re-resolving an OCI tag or semver range. At most one of interval and schedule. */
  schedule?: Cron;
  /** Glance image tags, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type ImageStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** OCI manifest digest (or sha256 of the URL download) of the current version. */
  digest?: string;
  /** OCI tag the digest was resolved from (for semver: the highest matching tag). */
  resolvedTag?: string;
  /** Glance images made from this manifest, newest first (at most `keep` plus versions still in use). */
  versions?: {
    /** Glance image ID. */
    id?: OpenstackID;
    /** OCI manifest digest of this version. */
    digest?: string;
    /** OCI tag it was resolved from. */
    tag?: string;
    /** When the Glance image was created. */
    createdAt?: string;
    /** Whether a VirtualMachine still uses it. */
    inUse?: boolean;
  }[];
  /** Progress of the upload in flight, if any. */
  transfer?: {
    /** Digest being transferred. */
    digest?: string;
    /** Bytes streamed to Glance so far. */
    bytesDone?: number;
    /** Total bytes, when known. */
    bytesTotal?: number;
    /** When the transfer started. */
    startedAt?: string;
  };
};

/** A Glance image whose data comes from an OCI registry (versioned like a container image) or an HTTP URL. */
export interface Image {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Image';
  metadata: NamespacedMetadata;
  spec: ImageSpec;
  status?: ImageStatus;
}

/** The tag the rollout governs, its waves and what makes a wave healthy. */
export type ImageRolloutSpec = {
  /**
   * The OCI repository and tag (or semver range) the rollout governs: every Image of a namespace that follows the same
   * repository and tag (or the same range) is gated.
   */
  source: {
    /**
     * Repository without scheme or tag, e.g. 127.0.0.1:5050/vm/cirros or registry.example.com/images/ubuntu. The first
     * component is always the registry host (no implicit Docker Hub).
     */
    repository: string;
    /** Tag to follow, e.g. 0.6. When the tag moves to a new digest, a new Glance image is made (see keep). */
    tag?: string;
    /** Semantic-version range; the highest matching tag is used, e.g. '>=0.6.0 <0.7.0', '0.6.x' or '~1.2'. */
    semver?: string;
    /** Talk plain HTTP to the registry (test registries only). */
    insecure?: boolean;
  };
  /**
   * The waves in order. A namespace belongs to the first wave whose selector takes it; namespaces no wave selects form
   * an implicit last wave named `rest` (no soak).
   */
  waves: ({
    /** The wave's name (not `rest`, the implicit last wave's). */
    name: DnsLabel;
    /**
     * Which namespaces the wave takes, by their labels (a Kubernetes label selector; an empty selector takes every
     * namespace no earlier wave took).
     */
    namespaceSelector: {
      /** Labels the namespace must carry, with these values. */
      matchLabels?: Record<string, string>;
      /** Label requirements, all of which must hold. */
      matchExpressions?: ({
        /** The label key. */
        key: string;
        /** In, NotIn, Exists or DoesNotExist. */
        operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
        /** Values for In and NotIn. */
        values?: string[];
      })[];
    };
    /** How long the wave must stay healthy, at the target digest, before the next wave is admitted. Default 5m. */
    soak?: Duration;
  })[];
  /**
   * What makes a wave healthy. Default: every VirtualMachine and Image of its namespaces Ready, and no server of their
   * projects in ERROR.
   */
  health?: {
    /**
     * Kinds whose objects in the wave's namespaces must be Ready (their Ready condition True). Default VirtualMachine
     * and Image.
     */
    kinds?: ("VirtualMachine" | "Image")[];
    /** A server of a wave's project in ERROR (Nova's status) fails the wave at once. */
    failOnServerError?: boolean;
    /** How long an admitted wave may take to become healthy before it fails. Default 15m. */
    progressDeadline?: Duration;
  };
  /** How often the controller asks the registry where the tag points. Default 1m. */
  interval?: Duration;
};

/** Observed state, written by the controller. */
export type ImageRolloutStatus = {
  /** metadata.generation of the spec the controller last acted on. */
  observedGeneration?: number;
  /**
   * Ready (every wave on the stable digest, nothing in progress) and Stalled (a wave failed: the rollout waits for a
   * new tag move).
   */
  conditions?: Conditions;
  /** The digest every namespace may use: the tag's digest before the move being rolled out (the previous). */
  stableDigest?: string;
  /** The digest the tag points to now, being rolled out (equal to stableDigest once every wave succeeded). */
  targetDigest?: string;
  /** The wave in progress, or the one that failed. */
  currentWave?: string;
  /** When the controller last asked the registry. */
  lastResolved?: string;
  /** One entry per wave, the implicit `rest` last. */
  waves?: ({
    /** The wave's name. */
    name: string;
    /**
     * Pending: not admitted yet; Progressing: admitted, its Images moving to the target and its VMs coming up; Soaking:
     * healthy, waiting out the soak; Succeeded; Failed: a server in ERROR, or not healthy within progressDeadline (the
     * rollout stopped, every namespace back on the stable digest).
     */
    phase: "Pending" | "Progressing" | "Soaking" | "Succeeded" | "Failed";
    /** The namespaces of the wave when it was last looked at. */
    namespaces?: string[];
    /** When the wave was admitted. */
    startedAt?: string;
    /** When the wave became healthy (its soak counts from here). */
    soakingSince?: string;
    /** When it succeeded or failed. */
    finishedAt?: string;
    /** Why it is in this phase. */
    message?: string;
  })[];
};

/**
 * Rolls a moved OCI tag out to namespaces in waves: the Images that follow the tag in a wave's namespaces get the new
 * digest only once the wave is admitted (the earlier waves healthy over their soak); a failed wave stops the rollout
 * and every Image returns to the stable digest. Enforced by the in-cluster controller only; `kupenstack apply` refuses
 * it. Cluster-scoped: the cluster admin's.
 */
export interface ImageRollout {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'ImageRollout';
  metadata: ClusterMetadata;
  spec: ImageRolloutSpec;
  status?: ImageRolloutStatus;
}

/**
 * Desired Nova key pair. The public key is imported; KupenStack never generates private keys. A change replaces the key
 * pair (running VMs keep the key they booted with). publicKey is required unless `import` is set.
 */
export type KeyPairSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Nova key pair instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /**
   * Name of the OpenStack key pair. Default: metadata.name. Nova key pairs belong to a user, so the agent prefixes the
   * project to keep names unique.
   */
  name?: OpenstackName;
  /** Key type (Nova microversion 2.2+). */
  type?: "ssh" | "x509";
  /**
   * Public key to import: one OpenSSH line (ssh-ed25519, ssh-rsa, ecdsa-sha2-*, sk-*) for type ssh, a PEM certificate
   * for type x509.
   */
  publicKey?: string;
};

/** Observed state, written by the agent. */
export type KeyPairStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Fingerprint of the public key, as Nova reports it. */
  fingerprint?: string;
};

/** A Nova key pair made from a public key kept in Git. */
export interface KeyPair {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'KeyPair';
  metadata: NamespacedMetadata;
  spec: KeyPairSpec;
  status?: KeyPairStatus;
}

/**
 * Desired Octavia load balancer: a VIP, and inline its listeners, each with its pool, members and health monitor.
 * KupenStack makes them in one create call, changes them one at a time (Octavia takes one change per load balancer at a
 * time and is busy while a change is PENDING), and prunes them children first. vip is required unless `import` is set.
 */
export type LoadBalancerSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Octavia load balancer instead of creating one: by `id`, or by a `filter` (name, tags) that must
   * match exactly one load balancer in the project. Its listeners are adopted only if they carry KupenStack's tags:
   * others are left alone.
   */
  import?: ImportSpec;
  /**
   * When the manifest is removed from Git: delete (default) the load balancer and the listeners, pools, members and
   * monitors KupenStack made in it, or detach and leave them in place.
   */
  onDelete?: OnDelete;
  /** Name of the Octavia load balancer. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the load balancer. */
  description?: string;
  /**
   * Where the VIP (the load balancer's address) lives: a Subnet, a Network or a Port manifest. Cannot change: another
   * VIP replaces the load balancer.
   */
  vip?: {
    /** Subnet manifest the VIP gets its address on. */
    subnetRef?: LocalRef;
    /** Network manifest the VIP gets its address on (Octavia picks the subnet). */
    networkRef?: LocalRef;
    /**
     * Port manifest that is the VIP: a FloatingIP manifest with portRef to the same Port gives the load balancer a
     * floating IP.
     */
    portRef?: LocalRef;
    /** The VIP address, on subnetRef or networkRef. Default: Octavia picks one. */
    address?: IpAddress;
  };
  /** Listeners on the VIP, each with its default pool. */
  listeners?: ({
    /** Name of the listener, unique in the load balancer: what its pool, members and monitor are known by. */
    name: DnsLabel;
    /** Protocol of the listener (HTTPS is passed through to the members: no certificate on the load balancer). */
    protocol: "HTTP" | "HTTPS" | "TCP" | "UDP";
    /** Port of the VIP the listener accepts connections on. */
    port: number;
    /** Most connections at once; -1 (default) is no limit. */
    connectionLimit?: number;
    /**
     * The listener's default pool: its backends and how traffic is spread over them. Its protocol is the listener's
     * (HTTP for HTTP, TCP for TCP, UDP for UDP, HTTPS for HTTPS passed through).
     */
    pool?: {
      /** How connections are spread over the members. Default: ROUND_ROBIN. */
      lbAlgorithm?: "ROUND_ROBIN" | "LEAST_CONNECTIONS" | "SOURCE_IP";
      /** Backends of the pool. */
      members?: {
        /**
         * Name of the member, unique in its pool. Default: the vmRef's name, or the address and port (10-0-0-5-8080).
         */
        name?: DnsLabel;
        /**
         * VirtualMachine manifest whose fixed address on the member subnet (subnetRef, else the VIP's subnet, else its
         * first address) is the backend address.
         */
        vmRef?: LocalRef;
        /** Backend address, when the backend is not a VirtualMachine manifest. */
        address?: IpAddress;
        /** Port the backend listens on (Octavia's protocol_port). */
        port: number;
        /** Share of the traffic relative to the other members; 0 takes the member out of rotation. Default: 1. */
        weight?: number;
        /** Subnet manifest the member is reached on. Default: the VIP's subnet when the VIP is given by subnetRef. */
        subnetRef?: LocalRef;
      }[];
      /** Octavia health monitor of the pool: members failing it are taken out of rotation. */
      healthMonitor?: {
        /** How members are probed. Cannot change: a new type replaces the monitor. */
        type: "HTTP" | "HTTPS" | "TCP" | "PING" | "UDP-CONNECT" | "TLS-HELLO";
        /** Seconds between probes. */
        delay: number;
        /** Seconds a probe may take; at most delay. */
        timeout: number;
        /** Successful probes before a member is ONLINE again. */
        maxRetries: number;
        /** Failed probes before a member is ERROR. Default: 3. */
        maxRetriesDown?: number;
        /** HTTP and HTTPS monitors: the path probed. Default: /. */
        urlPath?: string;
        /** HTTP and HTTPS monitors: the status codes that count as healthy (200, 200,202 or 200-204). Default: 200. */
        expectedCodes?: string;
        /** HTTP and HTTPS monitors: the method of the probe. Default: GET. */
        httpMethod?: "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "OPTIONS" | "PATCH" | "CONNECT" | "TRACE";
      };
    };
  })[];
};

/** Observed state, written by the agent. */
export type LoadBalancerStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** The VIP address, as Octavia reports it. */
  vipAddress?: string;
  /** Neutron port of the VIP, as Octavia reports it. */
  vipPortID?: string;
  /** Octavia's provisioning status: ACTIVE, PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE or ERROR. */
  provisioningStatus?: string;
  /** Octavia's operating status: ONLINE, DRAINING, OFFLINE, DEGRADED, ERROR or NO_MONITOR. */
  operatingStatus?: string;
  /** Each listener KupenStack made, as Octavia reports it. */
  listeners?: {
    /** Name of the listener. */
    name?: string;
    /** Octavia ID of the listener. */
    id?: string;
    /** Port of the listener. */
    port?: number;
    /** Provisioning status of the listener. */
    provisioningStatus?: string;
    /** Operating status of the listener. */
    operatingStatus?: string;
  }[];
  /** Each member KupenStack made, with its health as Octavia reports it. */
  members?: {
    /** Listener whose pool holds the member. */
    listener?: string;
    /** Name of the member. */
    name?: string;
    /** Backend address. */
    address?: string;
    /** Backend port. */
    port?: number;
    /** Health of the member: ONLINE, OFFLINE, ERROR, DRAINING or NO_MONITOR. */
    operatingStatus?: string;
  }[];
};

/**
 * An Octavia load balancer with its listeners, pools, members and health monitors: one manifest, several Octavia
 * objects.
 */
export interface LoadBalancer {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'LoadBalancer';
  metadata: NamespacedMetadata;
  spec: LoadBalancerSpec;
  status?: LoadBalancerStatus;
}

/** Desired Neutron network. */
export type NetworkSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Neutron network instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack network. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the network (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Administrative state: up (true) or down (false). Default at creation: true. */
  adminStateUp?: boolean;
  /**
   * Maximum transmission unit in bytes. At least 68 for IPv4 and 1280 for IPv6 subnets; Neutron caps it at what the
   * network type allows. Default: Neutron's (usually 1500 minus overlay overhead).
   */
  mtu?: number;
  /** Default port security (security groups, anti-spoofing) for new ports. Default: Neutron's (true). */
  portSecurityEnabled?: boolean;
  /** Shared with every project. Allowed only in admin namespaces. Default at creation: false. */
  shared?: boolean;
  /**
   * External network (router gateways and floating IPs). Allowed only in admin namespaces. Default at creation: false.
   */
  external?: boolean;
  /** DNS domain for ports of this network (needs the dns-integration extension), e.g. example.org. */
  dnsDomain?: string;
  /** Availability zone candidates. Immutable after creation. */
  availabilityZoneHints?: string[];
  /** Provider network attributes (admin namespaces only). Immutable after creation. */
  provider?: {
    /** Segmentation type. */
    networkType: "flat" | "vlan" | "vxlan" | "gre" | "geneve" | "local";
    /** Physical network name as configured in Neutron (flat and vlan). */
    physicalNetwork?: string;
    /** VLAN ID (1..4094), VXLAN/Geneve VNI or GRE key. */
    segmentationId?: number;
  };
  /** Tags set on the Neutron network, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type NetworkStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
};

/** A Neutron network. */
export interface Network {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Network';
  metadata: NamespacedMetadata;
  spec: NetworkSpec;
  status?: NetworkStatus;
}

/** One OpenStack-Helm chart. */
export type OpenStackCloudService = {
  /**
   * Deploy this chart. Defaults: keystone, glance, placement, nova, neutron, cinder, horizon, mariadb, rabbitmq and
   * memcached are enabled; the others are not. A chart whose needs are disabled is a validation error (nova and neutron
   * need each other).
   */
  enabled?: boolean;
  /** Replicas of the chart's API and worker Deployments. Default: from spec.size. */
  replicas?: number;
  /**
   * Configuration overrides, merged into the chart's `conf` values (e.g. {nova: {DEFAULT: {cpu_allocation_ratio:
   * 4.0}}}).
   */
  conf?: Record<string, unknown>;
  /**
   * Raw chart values, merged last over everything KupenStack renders. Use with care: they bypass KupenStack's checks.
   */
  values?: Record<string, unknown>;
  /**
   * Pinned images per image key of the chart (images.tags.<key>, e.g. {keystone_api:
   * registry.example.com/keystone:2025.1-fix1}). Not allowed in the revision that changes release: the release decides
   * the images of an upgrade.
   */
  images?: Record<string, string>;
};

/** Desired OpenStack deployment on this Kubernetes cluster, rendered into OpenStack-Helm charts. */
export type OpenStackCloudSpec = {
  /**
   * OpenStack release series, as OpenStack-Helm names it, e.g. 2025.1, 2025.2 (or a name such as zed, epoxy). A change
   * upgrades one service at a time (identity, placement, image, networking, compute, block storage, dashboard), after a
   * database backup. One release step at a time: the next release, or the next SLURP release from a SLURP release
   * (2024.1 → 2025.1); never backwards; nothing else in the spec may change in the same revision.
   */
  release: string;
  /** Preset for replicas, workers and resources: small (a lab or a few compute nodes), medium, large. */
  size?: "small" | "medium" | "large";
  /** OpenStack services (one OpenStack-Helm chart each). */
  services?: {
    /** Identity. */
    keystone?: OpenStackCloudService;
    /** Image. */
    glance?: OpenStackCloudService;
    /** Placement. */
    placement?: OpenStackCloudService;
    /** Compute. */
    nova?: OpenStackCloudService;
    /** Networking. */
    neutron?: OpenStackCloudService;
    /** Block storage. */
    cinder?: OpenStackCloudService;
    /** Dashboard. */
    horizon?: OpenStackCloudService;
    /** Orchestration. */
    heat?: OpenStackCloudService;
    /** Load balancer. */
    octavia?: OpenStackCloudService;
    /** Key manager. */
    barbican?: OpenStackCloudService;
    /** DNS. */
    designate?: OpenStackCloudService;
    /** Bare metal. */
    ironic?: OpenStackCloudService;
    /** Shared file systems. */
    manila?: OpenStackCloudService;
    /** Container orchestration. */
    magnum?: OpenStackCloudService;
    /** Instance HA. */
    masakari?: OpenStackCloudService;
  };
  /** Infrastructure charts the services depend on. */
  infrastructure?: {
    /** Database (Galera). */
    mariadb?: OpenStackCloudService;
    /** Message queue. */
    rabbitmq?: OpenStackCloudService;
    /** Token and API cache. */
    memcached?: OpenStackCloudService;
    /** Hypervisor daemon on compute nodes. */
    libvirt?: OpenStackCloudService;
    /** Open vSwitch on network and compute nodes. */
    openvswitch?: OpenStackCloudService;
    /** OVN (when neutron uses the OVN backend). */
    ovn?: OpenStackCloudService;
  };
  /**
   * Registry prefix replacing the registry of every container image, e.g. registry.example.com/mirror (air-gapped
   * installs).
   */
  imageRegistry?: string;
  /**
   * Where the OpenStack-Helm charts come from: a classic Helm repository (https://…, with index.yaml), an OCI registry
   * (oci://host/path; the chart is <path>/<chart>), or a folder of unpacked charts (path). Exactly one of repository
   * and path.
   */
  chart?: {
    /** Helm repository (http:// or https://, serving index.yaml) or OCI registry (oci://) of the charts. */
    repository?: string;
    /**
     * A folder holding one unpacked chart per service (<path>/<chart>/Chart.yaml), relative to the repository root or
     * absolute. For development and air-gapped installs.
     */
    path?: string;
    /** Chart version to use for every chart (exact, e.g. 2025.2.0). Default: the newest version the source offers. */
    version?: string;
    /**
     * Pins per chart (chart name → sha256 digest of its package, as index.yaml or the OCI manifest gives it).
     * OpenStack-Helm republishes the same version with a new helm-toolkit: a digest is the only pin that holds.
     */
    digests?: Record<string, string>;
    /**
     * Talk plain HTTP to an oci:// chart registry (a registry on a private network or loopback). TLS is verified
     * otherwise.
     */
    insecure?: boolean;
  };
  /**
   * When disruptive steps (upgrades, restarts for configuration changes) may start: each window opens at schedule (in
   * timeZone) and lasts duration. No new step starts outside a window; a step already running may overrun. Default: any
   * time.
   */
  maintenanceWindow?: {
    /** Start of each window. */
    schedule: Cron;
    /** Length of each window, e.g. 4h. */
    duration: Duration;
    /** IANA time zone of the schedule, e.g. Europe/Paris. Default: UTC. */
    timeZone?: string;
  };
  /**
   * Scheduled database backups (the mariadb chart's backup CronJob). A backup Job is also run before every upgrade,
   * whatever this says; a failed backup refuses the upgrade.
   */
  backup?: {
    /** When to back up. */
    schedule: Cron;
    /** Backups to retain. */
    keep?: number;
    /**
     * Where to store backups: a PersistentVolumeClaim name (pvc:<name>) or an object store URL (s3://bucket/prefix).
     * Default: a PVC made by KupenStack.
     */
    destination?: string;
  };
  /** Kubernetes namespace the OpenStack services run in. */
  namespace?: DnsLabel;
  /** Keystone region name of this cloud. */
  region?: string;
};

/** Observed state, written by the agent. */
export type OpenStackCloudStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Release every enabled service currently runs (empty during the first install). */
  release?: string;
  /** Per chart: health and version. */
  services?: Record<string, {
    /** All its workloads are ready. */
    ready?: boolean;
    /** OpenStack release it runs. */
    release?: string;
    /** Chart version applied. */
    chartVersion?: string;
    /** Details when not ready. */
    message?: string;
    /**
     * The service's public endpoint in the Keystone catalog, read with the controller's cloud when it has one, else
     * with the admin the install generated once the cloud is Ready (services only, not infrastructure).
     */
    endpoint?: {
      /** Keystone service type of the chart (identity, image, network, compute, volumev3…). */
      serviceType?: string;
      /** Public URL the catalog lists for that type (and the cloud's region). */
      url?: string;
      /**
       * Listed: the catalog has a public endpoint; Missing: it has none (not an error: a service being installed
       * registers it with its ks-endpoints Job); Unknown: the catalog could not be read (message says why).
       */
      state?: "Listed" | "Missing" | "Unknown";
      /** Why the endpoint is Missing or Unknown. */
      message?: string;
    };
  }>;
  /**
   * The Secret holding a clouds.yaml for the admin the install generated, written once the cloud is Ready (in its
   * namespace): start the resource loop with `kupenstack controller --cloud <cloud> --clouds-secret
   * <namespace>/<name>`. Names the Secret only; the password is never in status.
   */
  cloudsSecret?: {
    /** Namespace of the Secret (the cloud's). */
    namespace?: string;
    /** Name of the Secret (kupenstack-cloud-<name>-clouds-yaml). */
    name?: string;
    /** Key holding the clouds.yaml. */
    key?: string;
    /** Entry of that clouds.yaml (the OpenStackCloud's name). */
    cloud?: string;
    /** Keystone URL it logs in to (the in-cluster Service). */
    authUrl?: string;
  };
  /** Upgrade in progress or last finished. */
  upgrade?: {
    /** Release before the upgrade. */
    from?: string;
    /** Target release of this step. */
    to?: string;
    /** Service being upgraded. */
    service?: string;
    /** Phase. */
    phase?: "Backup" | "Upgrading" | "Succeeded" | "Failed";
    /** When the upgrade started. */
    startedAt?: string;
    /** Backup taken before the first step. */
    backup?: string;
    /** Step in progress or where the upgrade stopped (service/object). */
    step?: string;
  };
  /** Last database backup. */
  lastBackup?: {
    /** When it finished. */
    time?: string;
    /** Where it is. */
    location?: string;
    /** Outcome. */
    result?: "Succeeded" | "Failed";
  };
  /** The object the last run stopped at (absent when it did not fail). */
  failure?: {
    /** Install or upgrade step (group:phase, backup, or the chart being upgraded). */
    step?: string;
    /** Kind of the failing object. */
    kind?: string;
    /** Name of the failing object. */
    name?: string;
    /** Why it failed. */
    reason?: string;
    /** Exit code of the failed pod (Jobs). */
    exitCode?: number;
    /** The failed pod (Jobs). */
    pod?: string;
    /** Last lines of the failed pod's log. */
    logTail?: string;
  };
  /** When the next maintenance window opens, while a step waits outside one (the controller runs again then). */
  nextWindow?: string;
};

/** The OpenStack cloud itself: release, services and configuration, deployed with OpenStack-Helm. One per cluster. */
export interface OpenStackCloud {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'OpenStackCloud';
  metadata: ClusterMetadata;
  spec: OpenStackCloudSpec;
  status?: OpenStackCloudStatus;
}

/** Where the cloud's clouds.yaml is, which entry of it, which region. */
export type OpenStackCloudConnectionSpec = {
  /**
   * The Secret holding a clouds.yaml (openstacksdk format); a rotated Secret is used from the next run on, without a
   * restart. Give it, or openStackCloudRef.
   */
  secretRef?: {
    /**
     * Namespace of the Secret (the controller reads Secrets cluster-wide; keep clouds Secrets in the admin's
     * namespaces).
     */
    namespace: DnsLabel;
    /** Name of the Secret. */
    name: DnsSubdomain;
    /** Key holding the clouds.yaml. */
    key?: string;
  };
  /**
   * Entry of the clouds.yaml (its clouds: key). Required with secretRef; with openStackCloudRef, the install's own
   * entry.
   */
  cloud?: string;
  /**
   * An OpenStackCloud of this cluster: the connection uses the clouds.yaml Secret its install writes (its
   * status.cloudsSecret) once its Keystone is bootstrapped.
   */
  openStackCloudRef?: {
    /** Name of the OpenStackCloud. */
    name: DnsSubdomain;
  };
  /**
   * Region whose catalog endpoints are used (overrides the entry's region_name): two connections with the same
   * clouds.yaml and two regions are two clouds to the controller.
   */
  region?: string;
};

/**
 * Observed state, written by the controller. Never a credential: the Keystone URL, the entry and region, and why the
 * cloud is not reachable.
 */
export type OpenStackCloudConnectionStatus = {
  /** metadata.generation of the spec the controller last checked. */
  observedGeneration?: number;
  /**
   * Ready (Keystone answers and takes the credentials), Stalled (reason KeystoneUnreachable, BadCredentials,
   * SecretMissing, CloudNotReady, InvalidCloudsYaml).
   */
  conditions?: Conditions;
  /** Entry of the clouds.yaml in use. */
  cloud?: string;
  /** Region in use (empty: the catalog's first endpoint of each service). */
  region?: string;
  /** Keystone URL the connection logs in to. */
  authUrl?: string;
};

/**
 * A cloud (or one region of a cloud) the in-cluster controller reconciles namespaces into, besides its default cloud
 * (--cloud): a clouds.yaml in a Secret, or the cloud an OpenStackCloud installed. The cluster admin picks a namespace's
 * connection with the namespace label kupenstack.io/cloud=<connection name>; a namespace without it uses the default
 * cloud. Each connection has its own token cache, request limits and health: one cloud down leaves the others'
 * namespaces reconciling.
 */
export interface OpenStackCloudConnection {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'OpenStackCloudConnection';
  metadata: ClusterMetadata;
  spec: OpenStackCloudConnectionSpec;
  status?: OpenStackCloudConnectionStatus;
}

/** Desired Neutron port. networkRef is required unless `import` is set; it cannot change. */
export type PortSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Neutron port instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack port. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the port (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Network manifest of the port. */
  networkRef?: LocalRef;
  /**
   * Fixed addresses. Each gives a subnetRef, an ipAddress, or both. Default: one address from each subnet chosen by
   * Neutron.
   */
  fixedIPs?: {
    /** Subnet manifest to take the address from. */
    subnetRef?: LocalRef;
    /** Exact address (must lie in the subnet). */
    ipAddress?: IpAddress;
  }[];
  /** MAC address. Default: generated by Neutron. Changing it needs admin rights. */
  macAddress?: MacAddress;
  /**
   * SecurityGroup manifests applied to the port. Omitted: the project's default group. Must be empty when
   * portSecurityEnabled is false.
   */
  securityGroupRefs?: LocalRef[];
  /** Port security (security groups, anti-spoofing). Default: the network's. */
  portSecurityEnabled?: boolean;
  /** Administrative state: up (true) or down (false). Default at creation: true. */
  adminStateUp?: boolean;
  /** Extra addresses the port may send from (VIPs, keepalived). */
  allowedAddressPairs?: {
    /** An IP address or a CIDR. */
    ipAddress: string;
    /** MAC address. Default: the port's. */
    macAddress?: MacAddress;
  }[];
  /** VNIC type (binding:vnic_type); anything but normal needs matching hardware. Default at creation: normal. */
  vnicType?: "normal" | "direct" | "macvtap" | "baremetal" | "direct-physical" | "virtio-forwarder" | "smart-nic" | "remote-managed" | "vdpa";
  /** Tags set on the Neutron port, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type PortStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** MAC address of the port. */
  macAddress?: string;
  /** Fixed addresses of the port. */
  fixedIPs?: {
    /** Subnet ID. */
    subnetID?: string;
    /** Address. */
    ipAddress?: string;
  }[];
  /** ID of the device using the port (server or router). */
  deviceID?: string;
  /** Kind of device using the port, e.g. compute:nova or network:router_interface. */
  deviceOwner?: string;
};

/** A Neutron port, to give a VM a fixed address or to attach to a router. */
export interface Port {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Port';
  metadata: NamespacedMetadata;
  spec: PortSpec;
  status?: PortStatus;
}

/**
 * Desired quotas of the namespace's project. Omitted fields keep the cloud's defaults. One ProjectQuota per namespace.
 * It has no managementPolicy or import: the project's quotas always exist.
 */
export type ProjectQuotaSpec = {
  /**
   * Take over the project's quotas as they are (`kupenstack export` writes this): `id` is the project's id, and `adopt:
   * true` makes the only write the project tag that marks them as this owner's. A filter is not accepted: a project has
   * exactly one set of quotas.
   */
  import?: ImportSpec;
  /** When the manifest is removed: delete resets the quotas to the cloud's defaults, detach leaves them as they are. */
  onDelete?: OnDelete;
  /** Nova quotas. */
  compute?: {
    /** Servers. -1 means unlimited. */
    instances?: number;
    /** Virtual CPUs. -1 means unlimited. */
    cores?: number;
    /** RAM in MiB. -1 means unlimited. */
    ramMiB?: number;
    /** Key pairs (Nova counts them per user). -1 means unlimited. */
    keyPairs?: number;
    /** Server groups. -1 means unlimited. */
    serverGroups?: number;
    /** Servers per server group. -1 means unlimited. */
    serverGroupMembers?: number;
    /** Metadata items per server. -1 means unlimited. */
    metadataItems?: number;
  };
  /** Neutron quotas. */
  network?: {
    /** Networks. -1 means unlimited. */
    networks?: number;
    /** Subnets. -1 means unlimited. */
    subnets?: number;
    /** Ports. -1 means unlimited. */
    ports?: number;
    /** Routers. -1 means unlimited. */
    routers?: number;
    /** Floating IPs. -1 means unlimited. */
    floatingIPs?: number;
    /** Security groups. -1 means unlimited. */
    securityGroups?: number;
    /** Security group rules. -1 means unlimited. */
    securityGroupRules?: number;
    /** RBAC policies. -1 means unlimited. */
    rbacPolicies?: number;
    /** Subnet pools. -1 means unlimited. */
    subnetPools?: number;
  };
  /** Cinder quotas. */
  blockStorage?: {
    /** Volumes. -1 means unlimited. */
    volumes?: number;
    /** Total volume and snapshot size in GiB. -1 means unlimited. */
    gigabytes?: number;
    /** Snapshots. -1 means unlimited. */
    snapshots?: number;
    /** Backups. -1 means unlimited. */
    backups?: number;
    /** Total backup size in GiB. -1 means unlimited. */
    backupGigabytes?: number;
    /** Largest single volume in GiB. -1 means unlimited. */
    perVolumeGigabytes?: number;
  };
};

/** Observed state, written by the agent. id is the Keystone project ID. */
export type ProjectQuotaStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Keystone name of the project. */
  projectName?: string;
};

/** Compute, network and block-storage quotas of the namespace's OpenStack project. */
export interface ProjectQuota {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'ProjectQuota';
  metadata: NamespacedMetadata;
  spec: ProjectQuotaSpec;
  status?: ProjectQuotaStatus;
}

/** Desired Neutron router with its external gateway, interfaces and static routes. */
export type RouterSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Neutron router instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack router. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the router (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Administrative state: up (true) or down (false). Default at creation: true. */
  adminStateUp?: boolean;
  /**
   * External gateway of the router. Exactly one of networkRef (a Network manifest) or network (a pre-existing network).
   */
  externalGateway?: {
    /** External Network manifest (admin namespaces define these). */
    networkRef?: LocalRef;
    /**
     * Pre-existing external network, by id or by filter (e.g. {filter: {name: public}}). Exactly one of id and filter.
     */
    network?: {
      /** Network ID. */
      id?: OpenstackID;
      /** Criteria that must match exactly one network. */
      filter?: {
        /** Exact network name. */
        name?: OpenstackName;
        /** The network must carry all of these tags. */
        tags?: Tags;
      };
    };
    /**
     * Source-NAT traffic leaving through the gateway. Default: Neutron's (true); changing it usually needs admin
     * rights.
     */
    enableSNAT?: boolean;
    /**
     * Fixed addresses of the gateway port on the external network. Default: one address chosen by Neutron. Usually
     * needs admin rights.
     */
    externalFixedIPs?: {
      /** External Subnet manifest to take the address from. */
      subnetRef?: LocalRef;
      /** Pre-existing external subnet, by id or by filter. Exactly one of id and filter. */
      subnet?: {
        /** Subnet ID. */
        id?: OpenstackID;
        /** Criteria that must match exactly one subnet. */
        filter?: ImportFilter;
      };
      /** Address to use. */
      ipAddress?: IpAddress;
    }[];
  };
  /**
   * Internal interfaces. Each is exactly one of subnetRef (the router takes the subnet's gateway address) or portRef
   * (the router uses that port).
   */
  interfaces?: {
    /** Subnet manifest to attach. */
    subnetRef?: LocalRef;
    /** Port manifest to attach. */
    portRef?: LocalRef;
  }[];
  /** Static routes; each nextHop must be on a subnet the router is attached to. */
  routes?: {
    /** Destination network. */
    destination: Cidr;
    /** Next-hop address. */
    nextHop: IpAddress;
  }[];
  /** Distributed router (DVR). Admin only by default; immutable after creation. */
  distributed?: boolean;
  /** Highly available router (L3 HA). Admin only by default; immutable after creation. */
  ha?: boolean;
  /** Availability zone candidates. Immutable after creation. */
  availabilityZoneHints?: string[];
  /** Tags set on the Neutron router, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type RouterStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Addresses of the external gateway port. */
  externalGatewayIPs?: string[];
  /** Interfaces the router has, by port. */
  interfaces?: {
    /** Neutron port ID of the interface. */
    portID?: string;
    /** Subnet ID of the interface address. */
    subnetID?: string;
    /** Address of the interface. */
    ipAddress?: string;
  }[];
};

/** A Neutron router. */
export interface Router {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Router';
  metadata: NamespacedMetadata;
  spec: RouterSpec;
  status?: RouterStatus;
}

/**
 * Desired Neutron security group with its rules inline. `rules` is the complete rule set: rules found in Neutron and
 * not declared are removed, except the default egress rules (see deleteDefaultRules).
 */
export type SecurityGroupSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Neutron security group instead of creating one: by `id`, or by a `filter` that must match exactly
   * one object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is
   * adopted and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack security group. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the security group (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Stateful (connection-tracked) group. Default at creation: true. */
  stateful?: boolean;
  /**
   * Remove the allow-all egress rules (IPv4 and IPv6) that Neutron adds to every new group. When false they are kept
   * and never reported as drift.
   */
  deleteDefaultRules?: boolean;
  /** Rules of the group. Rules are immutable in Neutron: a changed rule is deleted and re-created. */
  rules?: ({
    /** Traffic direction the rule matches, seen from the VM. */
    direction: "ingress" | "egress";
    /** Address family; must match remoteIPPrefix (an IPv6 prefix needs ethertype IPv6). */
    ethertype?: "IPv4" | "IPv6";
    /**
     * IP protocol: a name (tcp, udp, icmp, icmpv6, sctp, gre, esp, ah, vrrp, ..., any) or a protocol number "0".."255"
     * as a string. Omitted: any protocol.
     */
    protocol?: string;
    /** First port (tcp, udp, sctp, dccp, udplite: 1..65535), or the ICMP type (icmp, icmpv6: 0..255). */
    portRangeMin?: number;
    /** Last port (>= portRangeMin), or the ICMP code (icmp, icmpv6: 0..255). */
    portRangeMax?: number;
    /** Remote network the rule matches, e.g. 203.0.113.0/24 or ::/0. */
    remoteIPPrefix?: Cidr;
    /**
     * Match traffic from ports in this SecurityGroup manifest; may name the group itself. Groups may name each other
     * (and themselves): such references do not order creation, the agent creates the groups first and their rules
     * after.
     */
    remoteGroupRef?: LocalRef;
    /** Human-readable description of the rule (OpenStack `description`, at most 255 characters). */
    description?: string;
  })[];
  /** Tags set on the Neutron security group, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type SecurityGroupStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Neutron IDs of the declared rules, in the order of spec.rules. */
  ruleIDs?: string[];
};

/** A Neutron security group and its rules. */
export interface SecurityGroup {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'SecurityGroup';
  metadata: NamespacedMetadata;
  spec: SecurityGroupSpec;
  status?: SecurityGroupStatus;
}

/**
 * Desired Nova server group. Nova cannot change a group after it is made: a change of policy, rules or name replaces
 * the group, and with it every VirtualMachine that names it in serverGroupRef (a server joins a group only when it is
 * created). policy is required unless `import` is set.
 */
export type ServerGroupSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Nova server group instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /**
   * Name of the OpenStack server group. Default: metadata.name. Server groups carry no tags or description, so the
   * agent appends its ownership marker to this name in Nova.
   */
  name?: OpenstackName;
  /**
   * Placement policy: affinity (same host), anti-affinity (different hosts, scheduling fails when there are not
   * enough), soft-affinity and soft-anti-affinity (best effort). Cannot change: a new policy replaces the group and its
   * members.
   */
  policy?: "affinity" | "anti-affinity" | "soft-affinity" | "soft-anti-affinity";
  /** Policy rules (Nova microversion 2.64+). Only with policy anti-affinity. Cannot change. */
  rules?: {
    /** At most this many members on one host (Nova's max_server_per_host). */
    maxServerPerHost?: number;
  };
};

/** Observed state, written by the agent. */
export type ServerGroupStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Policy Nova reports. */
  policy?: string;
  /** Nova server IDs in the group. */
  members?: string[];
  /** Number of servers in the group. */
  memberCount?: number;
};

/** A Nova server group: the scheduler places its member VMs together (affinity) or apart (anti-affinity). */
export interface ServerGroup {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'ServerGroup';
  metadata: NamespacedMetadata;
  spec: ServerGroupSpec;
  status?: ServerGroupStatus;
}

/**
 * Desired Neutron subnet. networkRef and cidr are required unless `import` is set. networkRef, ipVersion, cidr and the
 * IPv6 modes cannot change (a change replaces the subnet).
 */
export type SubnetSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Neutron subnet instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack subnet. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the subnet (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Network manifest this subnet belongs to. */
  networkRef?: LocalRef;
  /** IP version; must match cidr. */
  ipVersion?: 4 | 6;
  /** Address range of the subnet. Must not overlap other subnets of the network. */
  cidr?: Cidr;
  /** Gateway address inside cidr. Default: the first address of cidr. Must be absent when disableGateway is true. */
  gatewayIP?: IpAddress;
  /** No gateway on the subnet. Default: false. */
  disableGateway?: boolean;
  /** Ranges handed out to ports, inside cidr and excluding the gateway. Default: all of cidr except the gateway. */
  allocationPools?: {
    /** First address. */
    start: IpAddress;
    /** Last address. */
    end: IpAddress;
  }[];
  /** Run DHCP on the subnet. Default at creation: true. */
  enableDHCP?: boolean;
  /** DNS servers handed out by DHCP, in order (Neutron allows 5 by default). */
  dnsNameservers?: IpAddress[];
  /** Extra routes handed out by DHCP (Neutron allows 20 by default). */
  hostRoutes?: {
    /** Destination network. */
    destination: Cidr;
    /** Next-hop address. */
    nextHop: IpAddress;
  }[];
  /** IPv6 address assignment (ipVersion 6 only). */
  ipv6AddressMode?: "slaac" | "dhcpv6-stateful" | "dhcpv6-stateless";
  /** IPv6 router advertisement mode (ipVersion 6 only); if both modes are set they must be equal. */
  ipv6RAMode?: "slaac" | "dhcpv6-stateful" | "dhcpv6-stateless";
  /** Tags set on the Neutron subnet, besides the agent's own ownership tags. */
  tags?: Tags;
};

/** Observed state, written by the agent. */
export type SubnetStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Gateway address Neutron assigned (or none when the subnet has no gateway). */
  gatewayIP?: string;
  /** Address ranges Neutron allocates ports from. */
  allocationPools?: {
    /** First address. */
    start: string;
    /** Last address. */
    end: string;
  }[];
  /**
   * Addresses allocated in this subnet (Neutron's IP availability, every port counted): read where a run observes the
   * namespace's project alone, as the controller does, and the agent has the admin role.
   */
  usedIPs?: number;
  /** Addresses the allocation pools hold in total. */
  totalIPs?: number;
};

/** A Neutron subnet (IPv4 or IPv6) of a Network. */
export interface Subnet {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Subnet';
  metadata: NamespacedMetadata;
  spec: SubnetSpec;
  status?: SubnetStatus;
}

/**
 * What to pull and how: a Git repository (or a local directory, for development) of KupenStack manifests, kept applied
 * to the cloud.
 */
export type SyncSpec = {
  /** Where the manifests come from. Exactly one of git, oci or directory. */
  source: {
    /** A Git repository. */
    git?: {
      /** Repository URL (https:// or ssh://). */
      url: string;
      /** What to check out. Exactly one of branch, tag, semver or commit. */
      ref: {
        /** Branch to follow. */
        branch?: string;
        /** Tag to check out. */
        tag?: string;
        /** Semantic-version range over tags; the highest match is used. */
        semver?: string;
        /** Commit SHA to pin (SHA-1 or SHA-256, full length). */
        commit?: string;
      };
      /**
       * Secret with the Git credentials: username and password (or a token as password) for https, identity and
       * known_hosts for ssh. Default: anonymous.
       */
      secretRef?: SecretRef;
      /** Standalone (kupenstack.yaml) only: the Git user name, literally. Default with a password: git. */
      username?: string;
      /** Standalone only: environment variable holding the Git user name. */
      usernameEnv?: string;
      /** Standalone only: file holding the Git user name. */
      usernameFile?: string;
      /** Standalone only: environment variable holding the Git password or token, read before every fetch. */
      passwordEnv?: string;
      /** Standalone only: file holding the Git password or token (a mounted Secret), read before every fetch. */
      passwordFile?: string;
      /** Commit signature verification. */
      verify?: {
        /** head: the checked-out commit must be signed by one of the keys; none: no check. */
        mode: "head" | "none";
        /** Secret whose values are trusted PGP or SSH public keys. */
        publicKeysSecretRef?: SecretRef;
        /** Standalone only: file of trusted PGP public keys (armored), read before every fetch. */
        publicKeysFile?: string;
      };
    };
    /**
     * An OCI artifact holding the manifests: what `kupenstack push manifests` or Flux's `flux push artifact` writes
     * (one application/vnd.cncf.flux.content.v1.tar+gzip layer, a tar.gz of the folder). The revision is
     * `<tag>@sha256:<manifest digest>`, as Flux's OCIRepository writes it.
     */
    oci?: {
      /**
       * oci://HOST[:PORT]/REPOSITORY, without tag or digest (those go in ref), e.g.
       * oci://127.0.0.1:5050/infra/manifests. The first component is always the registry host.
       */
      url: string;
      /** What to pull. Exactly one of tag, semver or digest. */
      ref: {
        /**
         * Tag to follow; a move of the tag (seen at the interval, or at once through a registry notification) is a new
         * revision.
         */
        tag?: string;
        /** Semantic-version range over the repository's tags; the highest match is used, e.g. '>=1.0.0 <2.0.0'. */
        semver?: string;
        /** Pinned manifest digest, e.g. sha256:<64 hex>. Never moves. */
        digest?: string;
      };
      /** Talk plain HTTP to the registry (loopback test registries only). TLS is never unverified. */
      insecure?: boolean;
      /**
       * Secret (in the controller's namespace) of type kubernetes.io/dockerconfigjson holding the registry credentials,
       * as `kubectl create secret docker-registry` makes it. Default: anonymous.
       */
      secretRef?: SecretRef;
      /**
       * Standalone only: a docker config.json / .dockerconfigjson file with the registry credentials, read before every
       * fetch.
       */
      dockerConfigFile?: string;
      /**
       * Signature policy of the artifact, the same as an Image's spec.verify: a revision is used only when a cosign
       * signature by the trusted key (or keyless signer) covers its manifest digest; otherwise the Sync is Stalled
       * (VerificationFailed) naming the reference and digest, and nothing is applied. attestations are for Images only
       * and refused here. Default: none.
       */
      verify?: ImageVerify;
    };
    /** A local directory, watched for changes (development and standalone mode). */
    directory?: {
      /** Absolute path of the directory on the agent's file system. */
      path: string;
    };
  };
  /** Directory inside the source to load, relative to its root (no '..'). */
  path?: string;
  /** How often to fetch the source and correct drift. */
  interval?: Duration;
  /** Retry interval after a failed run. Default: interval. */
  retryInterval?: Duration;
  /** Time limit of one run (fetch, plan, apply, health). Default: interval. */
  timeout?: Duration;
  /** Also run on this cron schedule (in addition to interval and webhooks). */
  schedule?: Cron;
  /** Stop applying new revisions and correcting drift. */
  suspend?: boolean;
  /** Delete OpenStack objects this Sync created that are no longer declared. */
  prune?: boolean;
  /**
   * Syncs that must be Ready at their newest revision before this one applies (Flux's Kustomization dependsOn). A cycle
   * is refused.
   */
  dependsOn?: {
    /** Name of the Sync depended on (Syncs are cluster-scoped; standalone: a name under syncs:). */
    name: DnsSubdomain;
  }[];
  /**
   * Ready only when every object this Sync applied is Ready (Flux's wait: true); within timeout, else Ready False
   * naming the objects that are not.
   */
  wait?: boolean;
  /** Hold a revision that would delete more than this percentage of everything this Sync manages, until confirmed. */
  massDeleteThreshold?: number;
  /**
   * Prefix of the Keystone project made for each namespace: project name = prefix + namespace. Keystone names are at
   * most 64 characters, so prefix plus namespace must fit.
   */
  projectPrefix?: string;
  /**
   * Ownership identity written into the markers of this Sync's objects; each Sync prunes only what its owner made, so
   * two Syncs never share one. Default: the agent's owner (one Sync) or <owner>-<sync name>.
   */
  owner?: DnsLabel;
  /** Namespaces treated as admin: their flavors and images may be public, their networks shared or external. */
  adminNamespaces?: DnsLabel[];
  /**
   * In the cluster: the ServiceAccount whose identity every write of this Sync uses (the controller impersonates it),
   * so Kubernetes RBAC decides what the repository may create in which namespace. Required in the cluster; standalone
   * rejects it.
   */
  serviceAccountName?: DnsSubdomain;
  /**
   * Namespace of serviceAccountName (a Sync is cluster-scoped). Default: the controller's namespace. Standalone rejects
   * it.
   */
  serviceAccountNamespace?: DnsLabel;
  /**
   * Default signature policy of this Sync's OCI Images: an Image without its own spec.verify is imported only when
   * signed with cosign by this key, and, with attestations, only when it carries them. Default: none.
   */
  imageVerify?: ImageVerify;
  /** Run on push notifications from the Git host. Exactly one of secretRef, secretEnv or secretFile. */
  webhook?: {
    /** Secret whose `token` key verifies the payloads (HMAC). */
    secretRef?: SecretRef;
    /** Standalone only: environment variable holding the shared secret. */
    secretEnv?: string;
    /** Standalone only: file holding the shared secret. */
    secretFile?: string;
  };
  /**
   * Where this Sync's outcomes are sent (Flux's Alert and Provider in one list): a signed JSON webhook, Slack or Teams
   * incoming webhooks, or a commit status on the applied commit (GitHub, GitLab, Gitea/Forgejo). Every URL goes through
   * the egress policy.
   */
  notify?: ({
    /**
     * webhook: JSON signed with HMAC-SHA256 (X-KupenStack-Signature: sha256=<hex>); slack, teams: incoming webhooks;
     * github, gitlab, gitea: commit status on the applied commit (gitea also for Forgejo).
     */
    provider: "webhook" | "slack" | "teams" | "github" | "gitlab" | "gitea";
    /**
     * The forge's API base for a commit status (https://api.github.com, https://gitlab.example/api/v4,
     * https://gitea.example/api/v1) or a webhook's address. Slack and Teams addresses are credentials: give them as the
     * secret instead.
     */
    url?: string;
    /** Commit status only: owner/repo (GitLab: group/project) on the forge; default: the path of source.git.url. */
    repository?: string;
    /**
     * Which events to send; default all of them. A revision's outcomes (started, applied, rejected, held, failed: also
     * commit statuses) and what happens to the Sync's objects between revisions (drift-corrected, healed, image-rolled;
     * for the OpenStackCloud it applied, upgrade-step, upgrade-failed).
     */
    events?: ("started" | "applied" | "rejected" | "held" | "failed" | "drift-corrected" | "healed" | "image-rolled" | "upgrade-step" | "upgrade-failed")[];
    /**
     * Secret whose `token` key holds the HMAC key (webhook), the API token (commit status) or the whole
     * incoming-webhook address (slack, teams).
     */
    secretRef?: SecretRef;
    /** Standalone only: environment variable holding the token. */
    secretEnv?: string;
    /** Standalone only: file holding the token. */
    secretFile?: string;
  })[];
};

/** Observed state, written by the agent. */
export type SyncStatus = {
  /** metadata.generation the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** When the last run finished. */
  lastSyncTime?: string;
  /** Newest revision fetched from the source. */
  lastFetchedRevision?: string;
  /** Last revision applied successfully, e.g. main@sha1:<sha>. */
  lastAppliedRevision?: string;
  /** Last revision the agent tried to apply. */
  lastAttemptedRevision?: string;
  /** Revision held by massDeleteThreshold, waiting for confirmation. */
  heldRevision?: string;
  /** The newest revision, rejected: nothing of it applied (see diagnostics). */
  rejectedRevision?: string;
  /** Why rejectedRevision was rejected: <file>:<line>:<column>: <message>, files as the repository names them. */
  diagnostics?: string[];
  /** Recent runs, newest first. */
  history?: ({
    /** Revision of the run. */
    revision: string;
    /** When it started. */
    startedAt: string;
    /** How long it took. */
    duration?: Duration;
    /** Outcome. */
    result: "Succeeded" | "Failed" | "Rejected" | "Held";
    /** Details (first error, held reason). */
    message?: string;
    /** Objects per action, e.g. {created: 2, updated: 1, deleted: 0, unchanged: 40, failed: 0}. */
    counts?: Record<string, number>;
  })[];
  /**
   * Objects this Sync applied to the cluster (server-side apply); the next revision prunes those it no longer declares.
   */
  inventory?: {
    /** e.g. kupenstack.io/v1alpha1. */
    apiVersion: string;
    /** e.g. Network. */
    kind: string;
    /** Namespace; absent for cluster-scoped kinds. */
    namespace?: string;
    /** metadata.name. */
    name: string;
  }[];
  /**
   * With wait: how many of the applied objects are Ready, Reconciling or Stalled, and the first that are not Ready with
   * their reason.
   */
  health?: {
    /** Objects whose Ready condition is True. */
    ready?: number;
    /** Objects not Ready yet and not Stalled. */
    reconciling?: number;
    /** Objects whose Stalled condition is True. */
    stalled?: number;
    /** The first objects that are not Ready: kind/namespace/name: reason: message. */
    failing?: string[];
  };
  /**
   * The value of the kupenstack.io/reconcile-requested-at annotation the last finished run answered (Flux's
   * lastHandledReconcileAt): `kupenstack reconcile sync` waits for it.
   */
  lastHandledReconcileAt?: string;
};

/**
 * Pulls a Git repository of KupenStack manifests and keeps the cloud equal to it (fetch, validate, plan, apply, prune).
 */
export interface Sync {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Sync';
  metadata: ClusterMetadata;
  spec: SyncSpec;
  status?: SyncStatus;
}

/**
 * Desired Nova server. Exactly one of flavorRef or flavorName, and exactly one of imageRef or bootVolume. At most one
 * of userData and userDataSecretRef. Changing the flavor resizes the server; pointing imageRef at another Image
 * rebuilds it (destructive: local disk data is lost); a new version of the same Image (moved OCI tag) follows
 * onImageUpdate.
 */
export type VirtualMachineSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Nova server instead of creating one: by `id`, or by a `filter` that must match exactly one object
   * in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted and the
   * declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack server. Default: metadata.name. Also the default hostname. */
  name?: OpenstackName;
  /** Human-readable description of the server (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Flavor manifest to use. */
  flavorRef?: LocalRef;
  /** Name of a pre-existing public flavor, e.g. m1.small. */
  flavorName?: OpenstackName;
  /** Image manifest to boot from (local disk). */
  imageRef?: LocalRef;
  /**
   * Boot from a Cinder volume. Exactly one of imageRef (create a new volume from an Image manifest; size required) or
   * volumeRef (boot an existing Volume manifest).
   */
  bootVolume?: {
    /** Image manifest to create the root volume from. */
    imageRef?: LocalRef;
    /** Volume manifest to boot from (must be bootable). */
    volumeRef?: LocalRef;
    /** Size of the new root volume in GiB (at least the image's minDisk). */
    size?: number;
    /** Cinder volume type of the new root volume. Default: the cloud's default type. */
    volumeType?: string;
    /** Delete the root volume with the server. */
    deleteOnTermination?: boolean;
  };
  /**
   * NICs in order. Each is exactly one of networkRef (the agent creates the port, with securityGroupRefs) or portRef (a
   * Port manifest, which carries its own security groups). Empty or omitted: the server has no NIC.
   */
  networks?: {
    /** Network manifest to attach; the agent creates a port. */
    networkRef?: LocalRef;
    /** Fixed address on that network (networkRef only). */
    fixedIP?: IpAddress;
    /** Port manifest to attach. */
    portRef?: LocalRef;
  }[];
  /**
   * SecurityGroup manifests for the ports the agent creates from networkRef entries. Omitted: the project's default
   * group.
   */
  securityGroupRefs?: LocalRef[];
  /** KeyPair manifest injected at boot. */
  keyPairRef?: LocalRef;
  /**
   * ServerGroup manifest the server joins when it is created (Nova scheduler hint `group`). Cannot change: a server
   * joins a group only at creation, so a change (or a replaced group) replaces the server.
   */
  serverGroupRef?: LocalRef;
  /** Data volumes to attach, in order. */
  volumes?: {
    /** Volume manifest to attach. */
    volumeRef: LocalRef;
    /** Device name hint, e.g. /dev/vdb. Default: chosen by Nova (hypervisors may ignore it). */
    device?: string;
  }[];
  /**
   * User data (cloud-init, ignition...) as plain text; the agent base64-encodes it. Nova accepts at most 65535 bytes
   * encoded, i.e. about 48 KiB of text.
   */
  userData?: string;
  /** Secret holding the user data (default key: userData), for user data with secrets in it. */
  userDataSecretRef?: SecretKeyRef;
  /**
   * Nova server metadata: keys of at most 255 characters (letters, digits, '-', '_', ':', '.', ' '), string values of
   * at most 255. Updated in place.
   */
  metadata?: Record<string, string>;
  /** Availability zone to boot in. Default: Nova's choice. */
  availabilityZone?: string;
  /** Attach a config drive. Default at creation: false. */
  configDrive?: boolean;
  /** Declared power state: running (ACTIVE), shutoff (SHUTOFF), paused (PAUSED) or suspended (SUSPENDED). */
  powerState?: "running" | "shutoff" | "paused" | "suspended";
  /**
   * Self-healing of a server in ERROR, deleted outside Git, or in another state than powerState. Steps escalate reboot
   * -> rebuild -> recreate up to `strategy`; every attempt is recorded in status and as an Event, and the agent gives
   * up loudly after maxAttempts.
   */
  heal?: {
    /**
     * Most drastic step allowed: reboot (hard reboot only), rebuild (also rebuild from the image; local disk data is
     * lost) or recreate (also delete and re-create the server with the same ports and volumes).
     */
    strategy?: "reboot" | "rebuild" | "recreate";
    /** Attempts before giving up; 0 disables healing. */
    maxAttempts?: number;
    /** Wait before the first attempt; doubled after each failed attempt. */
    backoff?: Duration;
  };
  /**
   * What to do when imageRef resolves to a new Glance image (an OCI tag moved): ignore (keep running the old one) or
   * rebuild (destructive for local disks).
   */
  onImageUpdate?: "ignore" | "rebuild";
  /**
   * Nova server tags: at most 32, each 1 to 60 characters without '/' or ','. The agent adds its own ownership tags.
   */
  tags?: string[];
};

/** Observed state, written by the agent. */
export type VirtualMachineStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Nova status, e.g. BUILD, ACTIVE, SHUTOFF, PAUSED, SUSPENDED, ERROR. */
  serverStatus?: string;
  /** Power state derived from Nova: running, shutoff, paused, suspended or unknown. */
  powerState?: string;
  /** Glance image ID the server was built from (or its root volume was made from). */
  imageID?: string;
  /** Addresses of the server. */
  addresses?: ({
    /** Network name. */
    network?: string;
    /** IP address. */
    address?: string;
    /** fixed or floating. */
    type?: "fixed" | "floating";
    /** MAC address of the NIC. */
    macAddress?: string;
  })[];
  /** Healing state. */
  heal?: {
    /** Attempts made since the server was last healthy. */
    attempts?: number;
    /** True when maxAttempts was reached; a new revision or a healthy server resets it. */
    gaveUp?: boolean;
    /** Recent attempts, newest first. */
    history?: ({
      /** When it started. */
      time: string;
      /** Step taken. */
      step: "reboot" | "rebuild" | "recreate";
      /** Why: e.g. ServerError, ServerMissing, PowerStateMismatch. */
      reason?: string;
      /** Outcome. */
      result: "Succeeded" | "Failed" | "InProgress";
      /** Details. */
      message?: string;
    })[];
  };
};

/** A Nova server, kept in its declared power state and healed when it breaks. */
export interface VirtualMachine {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'VirtualMachine';
  metadata: NamespacedMetadata;
  spec: VirtualMachineSpec;
  status?: VirtualMachineStatus;
}

/** Desired Cinder volume. size is required unless `import` is set; it can only grow (extend). */
export type VolumeSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Cinder volume instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack volume. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the volume (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Size in GiB. Growing it extends the volume; shrinking is rejected. */
  size?: number;
  /** Cinder volume type. Default: the cloud's default type. A change retypes the volume. */
  volumeType?: string;
  /** Availability zone. Default: Cinder's choice. Cannot change. */
  availabilityZone?: string;
  /** Image manifest to fill the volume from; makes it bootable. Cannot change. */
  imageRef?: LocalRef;
  /** Where the volume's data comes from, other than an image. Cannot change. */
  source?: {
    /**
     * VolumeSnapshot manifest to make the volume from; size must be at least the snapshot's. Not with imageRef. Cannot
     * change.
     */
    snapshotRef?: LocalRef;
  };
  /** Cinder volume metadata: keys and values of at most 255 characters. */
  metadata?: Record<string, string>;
  /**
   * Allow attaching to several servers; needs a volume type with multiattach support. Default at creation: false.
   * Cannot change.
   */
  multiattach?: boolean;
};

/** Observed state, written by the agent. */
export type VolumeStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Cinder status, e.g. creating, available, in-use, error. */
  volumeStatus?: string;
  /** Whether Cinder marks the volume bootable. */
  bootable?: boolean;
  /** Where the volume is attached. */
  attachments?: {
    /** Nova server ID. */
    serverID?: string;
    /** Device name inside the server. */
    device?: string;
  }[];
};

/** A Cinder volume. */
export interface Volume {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'Volume';
  metadata: NamespacedMetadata;
  spec: VolumeSpec;
  status?: VolumeStatus;
}

/**
 * Desired Cinder snapshot. volumeRef is required unless `import` is set. The snapshot is taken once, when it is
 * created: it does not follow later writes to the volume; a different volume replaces it.
 */
export type VolumeSnapshotSpec = {
  /**
   * managed (default): the agent creates, updates and deletes the object. unmanaged: it only imports and observes it.
   */
  managementPolicy?: ManagementPolicy;
  /**
   * Adopt an existing Cinder snapshot instead of creating one: by `id`, or by a `filter` that must match exactly one
   * object in the project. With managementPolicy `unmanaged` the object is only observed; with `managed` it is adopted
   * and the declared fields are enforced on it.
   */
  import?: ImportSpec;
  /** When the manifest is removed from Git: delete (default) the OpenStack object, or detach and leave it in place. */
  onDelete?: OnDelete;
  /** Name of the OpenStack snapshot. Default: metadata.name. */
  name?: OpenstackName;
  /** Human-readable description of the snapshot (OpenStack `description`, at most 255 characters). */
  description?: string;
  /** Volume manifest to snapshot. Cannot change: another volume replaces the snapshot. */
  volumeRef?: LocalRef;
  /**
   * Snapshot a volume that is attached to a server (in-use); the data is crash-consistent only. Default: false. Read at
   * creation only.
   */
  force?: boolean;
  /** Cinder snapshot metadata: keys and values of at most 255 characters. */
  metadata?: Record<string, string>;
};

/** Observed state, written by the agent. */
export type VolumeSnapshotStatus = {
  /** metadata.generation of the manifest the agent last acted on. */
  observedGeneration?: number;
  /** Ready, Reconciling and Stalled conditions. */
  conditions?: Conditions;
  /** OpenStack ID of the object. */
  id?: OpenstackID;
  /** What OpenStack last reported for the object (free-form). */
  observed?: Observed;
  /** When the agent last compared this object with OpenStack. */
  lastSyncTime?: string;
  /** Cinder status, e.g. creating, available, error. */
  snapshotStatus?: string;
  /** Size in GiB: the size of the volume when the snapshot was taken. */
  size?: number;
  /** Cinder ID of the volume the snapshot was taken of. */
  volumeID?: string;
};

/** A Cinder snapshot of a Volume. */
export interface VolumeSnapshot {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'VolumeSnapshot';
  metadata: NamespacedMetadata;
  spec: VolumeSnapshotSpec;
  status?: VolumeSnapshotStatus;
}

export type KindName =
  | 'ApplicationCredential'
  | 'Flavor'
  | 'FloatingIP'
  | 'Image'
  | 'ImageRollout'
  | 'KeyPair'
  | 'LoadBalancer'
  | 'Network'
  | 'OpenStackCloud'
  | 'OpenStackCloudConnection'
  | 'Port'
  | 'ProjectQuota'
  | 'Router'
  | 'SecurityGroup'
  | 'ServerGroup'
  | 'Subnet'
  | 'Sync'
  | 'VirtualMachine'
  | 'Volume'
  | 'VolumeSnapshot';

export type AnyKind =
  | ApplicationCredential
  | Flavor
  | FloatingIP
  | Image
  | ImageRollout
  | KeyPair
  | LoadBalancer
  | Network
  | OpenStackCloud
  | OpenStackCloudConnection
  | Port
  | ProjectQuota
  | Router
  | SecurityGroup
  | ServerGroup
  | Subnet
  | Sync
  | VirtualMachine
  | Volume
  | VolumeSnapshot;

export interface SpecByKind {
  ApplicationCredential: ApplicationCredentialSpec;
  Flavor: FlavorSpec;
  FloatingIP: FloatingIPSpec;
  Image: ImageSpec;
  ImageRollout: ImageRolloutSpec;
  KeyPair: KeyPairSpec;
  LoadBalancer: LoadBalancerSpec;
  Network: NetworkSpec;
  OpenStackCloud: OpenStackCloudSpec;
  OpenStackCloudConnection: OpenStackCloudConnectionSpec;
  Port: PortSpec;
  ProjectQuota: ProjectQuotaSpec;
  Router: RouterSpec;
  SecurityGroup: SecurityGroupSpec;
  ServerGroup: ServerGroupSpec;
  Subnet: SubnetSpec;
  Sync: SyncSpec;
  VirtualMachine: VirtualMachineSpec;
  Volume: VolumeSpec;
  VolumeSnapshot: VolumeSnapshotSpec;
}

/**
 * A manifest's (or custom resource's) spec as its kind's type. The kind is checked here; the shape was checked by
 * the kind's schema (validate/ for a manifest, the CRD at admission for a custom resource).
 */
export function specOf<K extends KindName>(m: { kind: string; spec?: unknown }, kind: K): SpecByKind[K] {
  if (m.kind !== kind) throw new TypeError(`a ${m.kind} is not a ${kind}: its spec is not a ${kind}Spec`);
  return m.spec as SpecByKind[K];
}
