/*
 * The tests' Iceberg REST catalog server (tests/harness/iceberg_rest.py): the server of Iceberg's REST test
 * fixtures (RESTCatalogServer, iceberg-open-api's test-fixtures jar), put together the same way but with its
 * one HTTP connector bound to 127.0.0.1. RESTCatalogServer creates Jetty's Server(port), whose connector
 * listens on every interface and takes no host.
 *
 * In Iceberg's package for the fixtures' package-private pieces it reuses: RCKUtils (the CATALOG_* variables
 * read as catalog properties), RESTCatalogServer.CatalogContext and RESTServerCatalogAdapter.
 */
package org.apache.iceberg.rest;

import java.io.File;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.util.PropertyUtil;
import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class LoopbackRESTCatalogServer {
  static final String HOST = "127.0.0.1";

  private static final Logger LOG = LoggerFactory.getLogger(LoopbackRESTCatalogServer.class);

  private LoopbackRESTCatalogServer() {}

  /** The backing catalog's properties: the CATALOG_* variables, with the fixture's defaults. */
  static Map<String, String> catalogProperties() throws java.io.IOException {
    Map<String, String> props = new HashMap<>(RCKUtils.environmentCatalogConfig());
    props.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    props.putIfAbsent(CatalogProperties.URI, "jdbc:sqlite::memory:");
    props.putIfAbsent("jdbc.schema-version", "V1");
    if (props.get(CatalogProperties.WAREHOUSE_LOCATION) == null) {
      File scratch = Files.createTempDirectory("iceberg_warehouse").toFile();
      scratch.deleteOnExit();
      props.put(CatalogProperties.WAREHOUSE_LOCATION, new File(scratch, "iceberg_data").getAbsolutePath());
    }
    return props;
  }

  /** A Jetty server for the catalog `props` describe, not yet started; its only connector on 127.0.0.1. */
  static Server build(Map<String, String> props) {
    String name = PropertyUtil.propertyAsString(props, RESTCatalogServer.CATALOG_NAME, RESTCatalogServer.CATALOG_NAME_DEFAULT);
    // the properties hold the storage's secrets: they are not logged
    LOG.info("Building catalog {} ({})", name, props.get(CatalogProperties.CATALOG_IMPL));
    Catalog backend = CatalogUtil.buildIcebergCatalog(name, props, new Configuration());
    RESTCatalogServer.CatalogContext context = new RESTCatalogServer.CatalogContext(backend, props);

    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTServerCatalogAdapter(context))), "/*");
    CompressionHandler compression = new CompressionHandler();
    compression.putCompression(new GzipCompression());
    handler.insertHandler(compression);

    // No connector until this one, whose host is set before the server opens it: the socket is bound to
    // 127.0.0.1 when created, never to the wildcard address.
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(HOST);
    connector.setPort(PropertyUtil.propertyAsInt(props, RESTCatalogServer.REST_PORT, RESTCatalogServer.REST_PORT_DEFAULT));
    server.addConnector(connector);
    server.setHandler(handler);
    return server;
  }

  public static void main(String[] args) throws Exception {
    Server server = build(catalogProperties());
    server.start();
    LOG.info("Listening on http://{}:{}", HOST, ((ServerConnector) server.getConnectors()[0]).getLocalPort());
    server.join();
  }
}
